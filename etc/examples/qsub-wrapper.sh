#!/bin/bash
#PBS -l select=2:ncpus=32:mpiprocs=4
#PBS -l walltime=02:00:00
# The PBS form of sbatch-wrapper.sh: the nodes and ranks per node come
# from $PBS_NODEFILE (one line per MPI process), launch starts an agent on
# every host with pbsdsh, then runs the trainer under mpirun over them.
# PBS sends no warning signal before the walltime: checkpoint by time
# (--checkpoint-every) and resubmit to resume. Afterwards: cadre import
# "$run" && cadre report NAME.
run=$HOME/runs/bert-base-${PBS_JOBID%%.*}
cd "$PBS_O_WORKDIR" || exit 1
exec cadre-agent launch --from-env --run-dir "$run" \
    -- cadre-train train --model bert-base --data /project/shards/wiki \
    --batch 32 --seq 128 --steps 10000 --checkpoint-every 1200 --out "$run"
