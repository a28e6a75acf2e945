#!/bin/bash
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=4
#SBATCH --time=02:00:00
#SBATCH --signal=B:USR1@120
# Your own sbatch script with cadre's agents, launch, checkpoints and
# metrics (README "Using cadre in your own sbatch or qsub script"). The
# nodes and ranks per node come from the allocation; launch starts an
# agent on every node itself, runs the trainer under mpirun over them,
# and passes SIGUSR1 (120 s before the limit: checkpoint) and SIGTERM to
# the ranks. Resubmitting the same script resumes from the newest
# checkpoint in the run dir. Afterwards: cadre import "$run" && cadre
# report NAME.
#
# --stage copies the shards to each node's local disk first (checked by
# SHA-256, skipped when already there, removed after the run); the
# trainer then reads the local copy.
run=$HOME/runs/bert-base-$SLURM_JOB_NAME
exec cadre-agent launch --from-env --run-dir "$run" \
    --stage "/project/shards/wiki:/tmp/cadre-$SLURM_JOB_ID/wiki" \
    -- cadre-train train --model bert-base --data "/tmp/cadre-$SLURM_JOB_ID/wiki" \
    --batch 32 --seq 128 --steps 10000 --checkpoint-every 1200 --out "$run"
