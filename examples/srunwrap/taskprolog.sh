#!/bin/sh
# A Slurm TaskProlog for sites that want srunwrap's NCCL variables (and the
# per-rank CUDA_VISIBLE_DEVICES) without users wrapping their commands:
#
#   slurm.conf:  TaskProlog=/etc/slurm/taskprolog.sh
#
# slurmstepd runs it as the user, with the task's environment, before each
# task, and puts every "export NAME=VALUE" line it prints into the task's
# environment. A TaskProlog is a separate process, so it cannot bind the
# task's CPUs or memory: pair it with Slurm's --cpu-bind/--mem-bind (or
# use srunwrap itself for that). Warnings go to stderr (slurmd's log).
exec /usr/local/bin/srunwrap --task-prolog
