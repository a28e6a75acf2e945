#!/usr/bin/env python3
"""The torchrun-ddp example's training (../torchrun-ddp/train.py) written
with Hugging Face Accelerate, following the same program contract:

- Accelerator finds the ranks `accelerate launch` started (on CPUs it
  uses gloo);
- rank 0 appends "step" and "checkpoint" JSON lines to $CADRE_METRICS;
- SIGUSR1 (or SIGTERM) asks for a checkpoint at the next step boundary
  (Accelerator.save_state: model, optimizer and every rank's RNG state,
  plus progress.json with the step, elapsed time and data position);
  then exit 75 if $CADRE_STOP_FILE exists;
- $CADRE_RESUME_FROM names the checkpoint to continue from
  (Accelerator.load_state).

  accelerate launch --multi_gpu --num_machines 1 --num_processes 2 \
      train_accelerate.py --steps 20
"""
import argparse
import json
import os
import signal
import sys
import time

import torch
from accelerate import Accelerator
from transformers import BertConfig, BertForSequenceClassification

EXIT_REQUEUE = 75  # EX_TEMPFAIL: "checkpointed and stopped, run me again"
VOCAB, SEQ_LEN = 128, 32


def batch(first, n, seed):
    """Samples first..first+n-1: each a function of its global index, so
    the data position is one number (as in ../torchrun-ddp/train.py)."""
    ids, labels = [], []
    g = torch.Generator()
    for i in range(first, first + n):
        g.manual_seed(seed * 1_000_003 + i)
        x = torch.randint(2, VOCAB, (SEQ_LEN,), generator=g)
        x[0] = 1
        ids.append(x)
        labels.append(int(x[1] < VOCAB // 2))
    return torch.stack(ids), torch.tensor(labels)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--batch", type=int, default=8, help="sequences per rank per step")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--step-sleep", type=float, default=0.0)
    p.add_argument("--metrics", default=os.environ.get("CADRE_METRICS", ""))
    args = p.parse_args()

    requested = [False]  # the handler only sets it; the ranks agree below
    signal.signal(signal.SIGUSR1, lambda s, f: requested.__setitem__(0, True))
    signal.signal(signal.SIGTERM, lambda s, f: requested.__setitem__(0, True))

    acc = Accelerator()
    rank, world = acc.process_index, acc.num_processes
    ckdir = os.environ.get("CADRE_CHECKPOINT_DIR") or "checkpoints"
    stop_file = os.environ.get("CADRE_STOP_FILE", "")
    resume = os.environ.get("CADRE_RESUME_FROM", "")

    torch.manual_seed(args.seed)
    model = BertForSequenceClassification(BertConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=64, num_labels=2,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0))
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    model, opt = acc.prepare(model, opt)

    step, elapsed_before, next_sample = 0, 0.0, 0
    if resume:
        acc.load_state(resume)
        with open(os.path.join(resume, "progress.json")) as f:
            pr = json.load(f)
        step, elapsed_before, next_sample = pr["step"], pr["elapsed_s"], pr["next_sample"]
    # O_APPEND and one write per line: whole lines, whatever kills us
    fd = -1
    if acc.is_main_process and args.metrics:
        fd = os.open(args.metrics, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    def emit(**fields):
        if fd >= 0:
            os.write(fd, (json.dumps(fields, separators=(",", ":")) + "\n").encode())

    gbatch = args.batch * world
    t0 = time.monotonic()
    while step < args.steps:
        t_step = time.monotonic()
        ids, labels = batch(next_sample + rank * args.batch, args.batch, args.seed)
        loss = model(input_ids=ids.to(acc.device), labels=labels.to(acc.device)).loss
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
        if args.step_sleep:
            time.sleep(args.step_sleep)
        step += 1
        next_sample += gbatch

        # the mean loss, and whether any rank saw the signal
        agree = acc.reduce(torch.tensor([loss.item(), float(requested[0])],
                                        device=acc.device), reduction="sum")
        now = time.monotonic()
        elapsed = elapsed_before + (now - t0)
        emit(event="step", step=step, loss=agree[0].item() / world, elapsed_s=elapsed,
             samples_per_s=gbatch / (now - t_step))
        if agree[1].item() == 0:
            continue

        requested[0] = False
        final = os.path.join(ckdir, f"step-{step}")
        acc.save_state(final + ".tmp")  # every rank writes its RNG state there
        acc.wait_for_everyone()
        if acc.is_main_process:
            with open(os.path.join(final + ".tmp", "progress.json"), "w") as f:
                json.dump({"step": step, "elapsed_s": elapsed, "next_sample": next_sample}, f)
            os.rename(final + ".tmp", final)  # a step-N that exists is complete
            emit(event="checkpoint", step=step, path=os.path.abspath(final))
        acc.wait_for_everyone()
        stop = acc.reduce(torch.tensor([float(bool(stop_file) and os.path.exists(stop_file))],
                                       device=acc.device), reduction="sum")
        if stop.item() > 0:
            signal.signal(signal.SIGUSR1, signal.SIG_IGN)
            sys.exit(EXIT_REQUEUE)
    # Training is over: a request from now on has nothing to save, and
    # Python puts the default action (death) back as it exits.
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    acc.wait_for_everyone()


if __name__ == "__main__":
    main()
