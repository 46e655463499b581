#!/usr/bin/env bash
# The per-rank bind script srunwrap replaces, as NVIDIA's examples write it:
# nvidia-smi topo -m for the rank's GPU's CPU and NUMA affinity, then
# numactl. Only for make bench's comparison on a GPU node.
set -euo pipefail
gpu=${SLURM_LOCALID:-0}
line=$(nvidia-smi topo -m | awk -v g="GPU$gpu" '$1 == g')
cpus=$(awk '{for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$/ && $(i+1) ~ /^([0-9]+|N\/A)$/) {print $i; exit}}' <<<"$line")
node=$(awk '{for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$/ && $(i+1) ~ /^([0-9]+|N\/A)$/) {print $(i+1); exit}}' <<<"$line")
export CUDA_VISIBLE_DEVICES=$gpu
[ "$node" = "N/A" ] && node=0
if command -v numactl >/dev/null; then
  exec numactl --physcpubind="$cpus" --membind="$node" "$@"
fi
exec taskset -c "$cpus" "$@"
