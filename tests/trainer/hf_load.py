# A directory cadre wrote (a checkpoint, or `cadre export`'s) loads with
# transformers' BertForPreTraining.from_pretrained with no missing or
# unexpected weights; with --tokenizer, BertTokenizer loads from it too.
# Prints PASS/FAIL lines; exit 1 on a failure.
#   hf_load.py DIR [--tokenizer]
import sys

from transformers import BertForPreTraining, BertTokenizer

d = sys.argv[1]
m, info = BertForPreTraining.from_pretrained(d, output_loading_info=True)
# position_ids is a buffer, and the decoder bias is tied to
# cls.predictions.bias: neither is a weight of its own to save.
bad = [k for k in info["missing_keys"] + info["unexpected_keys"]
       if not k.endswith("position_ids") and k != "cls.predictions.decoder.bias"]
if bad:
    print("FAIL: %s: missing or unexpected weights %s" % (d, bad))
    sys.exit(1)
print("PASS: BertForPreTraining.from_pretrained: every weight loaded")
if "--tokenizer" in sys.argv[2:]:
    ids = BertTokenizer.from_pretrained(d)("the package")["input_ids"]
    print("PASS: BertTokenizer.from_pretrained: 'the package' is %s" % ids)
