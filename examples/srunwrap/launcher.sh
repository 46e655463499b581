#!/bin/bash
# The same from a login node or inside an allocation, with srunwrap as the
# launcher: --srun runs
#   srun -N2 --ntasks-per-node=8 --gpus-per-node=8 --cpu-bind=none /path/to/srunwrap -v -- python train.py
# (-v: each rank prints its GPU, CPUs, memory and NCCL_IB_HCA on stderr).
exec srunwrap -v --srun -N2 --ntasks-per-node=8 --gpus-per-node=8 --cpu-bind=none -- python train.py "$@"
