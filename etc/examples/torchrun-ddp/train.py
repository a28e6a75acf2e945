#!/usr/bin/env python3
"""A small PyTorch DDP program that follows cadre's program contract.

It fine-tunes a tiny Hugging Face BertForSequenceClassification (built in
code, nothing downloaded) on synthetic data with gloo on CPUs, and shows
what a program run by cadre does (docs/program.md):

- rank and world size from torch's env:// variables (torchrun, or cadre's
  per_rank launch), else from Open MPI's OMPI_COMM_WORLD_* (mpirun under
  a `once` launch);
- rank 0 appends JSON lines to $CADRE_METRICS: a "step" event per step and
  a "checkpoint" event once a checkpoint is complete;
- SIGUSR1 (or SIGTERM) asks for a checkpoint: saved at the next step
  boundary; then, if $CADRE_STOP_FILE exists, exit 75 so cadre requeues;
- $CADRE_RESUME_FROM (empty on a first attempt) names the checkpoint to
  continue from exactly: model, optimizer, RNG, data position, step and
  elapsed time, so a resumed run ends with the same weights as one that
  never stopped.

Without any CADRE_* variable (plain torchrun) it trains all the same;
metrics then go to --metrics FILE, or nowhere.

  torchrun --nproc_per_node 2 train.py --steps 20
"""
import argparse
import hashlib
import json
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import BertConfig, BertForSequenceClassification

EXIT_REQUEUE = 75  # EX_TEMPFAIL: "checkpointed and stopped, run me again"
VOCAB, SEQ_LEN = 128, 32


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--batch", type=int, default=8, help="sequences per rank per step")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--step-sleep", type=float, default=0.0,
                   help="seconds to sleep in each step (slow steps for signal tests)")
    p.add_argument("--metrics", default=os.environ.get("CADRE_METRICS", ""),
                   help="JSON lines file (default $CADRE_METRICS)")
    p.add_argument("--weights-out", default="",
                   help="directory: each rank writes weights-rank-R.sha256 at the end")
    return p.parse_args()


def init_distributed():
    """Joins the process group; returns (rank, world_size)."""
    env = os.environ
    if "RANK" not in env and "OMPI_COMM_WORLD_RANK" in env:
        # mpirun started us: env:// reads RANK and WORLD_SIZE, so map
        # Open MPI's names onto torch's. MASTER_ADDR/PORT come with
        # `mpirun -x MASTER_ADDR -x MASTER_PORT`.
        env["RANK"] = env["OMPI_COMM_WORLD_RANK"]
        env["WORLD_SIZE"] = env["OMPI_COMM_WORLD_SIZE"]
        env["LOCAL_RANK"] = env.get("OMPI_COMM_WORLD_LOCAL_RANK", "0")
        env["LOCAL_WORLD_SIZE"] = env.get("OMPI_COMM_WORLD_LOCAL_SIZE", "1")
    # A lone `python3 train.py` is a world of one.
    env.setdefault("RANK", "0")
    env.setdefault("WORLD_SIZE", "1")
    env.setdefault("MASTER_ADDR", "127.0.0.1")
    env.setdefault("MASTER_PORT", "29500")
    dist.init_process_group("gloo", init_method="env://")
    return dist.get_rank(), dist.get_world_size()


def batch(first, n, seed):
    """Samples first..first+n-1 of the data set. Each sample is a function
    of its global index alone, so every rank layout with the same global
    batch trains on the same data, and the data position is one number."""
    ids, labels = [], []
    g = torch.Generator()
    for i in range(first, first + n):
        g.manual_seed(seed * 1_000_003 + i)
        x = torch.randint(2, VOCAB, (SEQ_LEN,), generator=g)
        x[0] = 1  # a [CLS]-like first token for the classifier to read
        ids.append(x)
        # A label the model can learn: is the second token in the lower half?
        labels.append(int(x[1] < VOCAB // 2))
    return torch.stack(ids), torch.tensor(labels)


def make_model(seed):
    torch.manual_seed(seed)  # every rank builds the same initial weights
    cfg = BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                     num_attention_heads=2, intermediate_size=64,
                     max_position_embeddings=64, num_labels=2,
                     # no dropout: its random masks would make a resumed
                     # run differ from an uninterrupted one
                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return BertForSequenceClassification(cfg)


class Metrics:
    """Rank 0's JSON lines. Each line goes out with one write(2) on an
    O_APPEND descriptor, so a killed program leaves whole lines and
    several attempts can append to the same file."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644) if path else -1

    def emit(self, **fields):
        if self.fd >= 0:
            os.write(self.fd, (json.dumps(fields, separators=(",", ":")) + "\n").encode())


def save_checkpoint(ckdir, step, state):
    """Rank 0 writes ckdir/step-N as a temporary directory, then renames
    it into place: a step-N that exists is complete."""
    final = os.path.join(ckdir, f"step-{step}")
    tmp = final + f".tmp-{os.getpid()}"
    os.makedirs(tmp, exist_ok=True)
    torch.save(state, os.path.join(tmp, "state.pt"))
    with open(os.path.join(tmp, "state.pt"), "rb+") as f:
        os.fsync(f.fileno())
    os.rename(tmp, final)
    return final


def weights_sha256(model):
    """SHA-256 of the state_dict in name order: equal on every rank when
    DDP kept them in step."""
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(t.detach().contiguous().cpu().numpy().tobytes())
    return h.hexdigest()


def main():
    args = parse_args()
    # The handler only sets a flag: the ranks act on it together, at a
    # step boundary, once they agree (below).
    requested = [False]
    def on_signal(signum, frame):
        requested[0] = True
    signal.signal(signal.SIGUSR1, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    rank, world = init_distributed()
    ckdir = os.environ.get("CADRE_CHECKPOINT_DIR") or "checkpoints"
    stop_file = os.environ.get("CADRE_STOP_FILE", "")
    resume = os.environ.get("CADRE_RESUME_FROM", "")

    model = make_model(args.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    step, elapsed_before, next_sample = 0, 0.0, 0
    if resume:
        # Every rank reads the checkpoint: each needs the optimizer state.
        st = torch.load(os.path.join(resume, "state.pt"))
        model.load_state_dict(st["model"])
        opt.load_state_dict(st["optimizer"])
        torch.set_rng_state(st["rng"])
        step, elapsed_before, next_sample = st["step"], st["elapsed_s"], st["next_sample"]
    ddp = DDP(model)
    metrics = Metrics(args.metrics if rank == 0 else "")
    gbatch = args.batch * world

    t0 = time.monotonic()  # the elapsed time of this attempt starts here
    while step < args.steps:
        t_step = time.monotonic()
        ids, labels = batch(next_sample + rank * args.batch, args.batch, args.seed)
        loss = ddp(input_ids=ids, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        if args.step_sleep:
            time.sleep(args.step_sleep)
        step += 1
        next_sample += gbatch

        # One all-reduce per step: the mean loss, and whether any rank
        # saw the checkpoint signal (they may see it a step apart).
        agree = torch.tensor([loss.item(), float(requested[0])], dtype=torch.float64)
        dist.all_reduce(agree)
        mean_loss, save = agree[0].item() / world, agree[1].item() > 0
        now = time.monotonic()
        elapsed = elapsed_before + (now - t0)
        metrics.emit(event="step", step=step, loss=mean_loss, elapsed_s=elapsed,
                     samples_per_s=gbatch / (now - t_step))
        if not save:
            continue

        requested[0] = False
        if rank == 0:
            path = save_checkpoint(ckdir, step, {
                "model": model.state_dict(), "optimizer": opt.state_dict(),
                "rng": torch.get_rng_state(), "step": step,
                "elapsed_s": elapsed, "next_sample": next_sample})
            metrics.emit(event="checkpoint", step=step, path=os.path.abspath(path))
        dist.barrier()  # the checkpoint is complete before anyone stops
        # All stop if any rank sees the stop file: on a network file
        # system with attribute caching another rank may not see it yet.
        stop = torch.tensor([float(bool(stop_file) and os.path.exists(stop_file))])
        dist.all_reduce(stop, op=dist.ReduceOp.MAX)
        if stop.item() > 0:
            signal.signal(signal.SIGUSR1, signal.SIG_IGN)
            dist.destroy_process_group()
            sys.exit(EXIT_REQUEUE)

    # Training is over: a request from now on has nothing to save, and
    # Python puts the default action (death) back as it exits.
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    if args.weights_out:
        os.makedirs(args.weights_out, exist_ok=True)
        with open(os.path.join(args.weights_out, f"weights-rank-{rank}.sha256"), "w") as f:
            f.write(weights_sha256(model) + "\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
