# A user's PyTorch program, per_node, for tests/daemon/local-container.sh:
# joins the other nodes through torch.distributed (gloo, cadre's
# MASTER_ADDR/MASTER_PORT), all-reduces its node rank + 1, and writes what
# it saw, with the image's marker file, to RUN_DIR/ddp-NODE_RANK.txt.
import os

import torch
import torch.distributed as dist

rank = int(os.environ["CADRE_NODE_RANK"])
world = int(os.environ["CADRE_NNODES"])
dist.init_process_group(
    "gloo",
    init_method="tcp://%s:%s" % (os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"]),
    rank=rank,
    world_size=world,
)
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
with open("/etc/cadre-image") as f:
    marker = f.read().strip()
out = os.path.join(os.environ["CADRE_RUN_DIR"], "ddp-%d.txt" % rank)
with open(out, "w") as f:
    f.write("sum %g world %d image %s\n" % (t.item(), world, marker))
dist.destroy_process_group()
