#!/usr/bin/env bash
# Part of make bench: what irq_affinity adds to the hooks, on the simulated
# 8-GPU node given a large node's interrupts (test/mkirqs.sh: 64 MSI-X
# vectors per GPU and HCA, 1,024 device IRQs, and 256 other IRQs): the
# hooks with housekeeping_cpus alone, then with irq_affinity too
# (test/hookbench.py, whole-process times).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(mktemp -d "$( [ -d /dev/shm ] && echo /dev/shm || echo /tmp )/gpuprep-bench.XXXXXX")
trap 'rm -rf "$root"' EXIT
tar xzf test/roots/dgxh100.tar.gz -C "$root"
mkdir -p "$root/etc/slurm"
"${BIN:-bin/sim}/gpuprep-gres" --root "$root" --gpu-backend mock:dgxh100 > "$root/etc/slurm/gres.conf"
bash test/mkirqs.sh "$root" 64 256
echo "$(grep -c ':' "$root/proc/interrupts") IRQs on the simulated node"
hk=$'[profiles.default]\nhousekeeping_cpus = {cores_per_numa = 1}\n'
echo "== housekeeping_cpus alone"
HOOKBENCH_PROFILE=$hk python3 test/hookbench.py "$root" "${RUNS:-20}" "${BIN:-bin/sim}"
echo "== housekeeping_cpus and irq_affinity"
HOOKBENCH_PROFILE="${hk}irq_affinity = true"$'\n' python3 test/hookbench.py "$root" "${RUNS:-20}" "${BIN:-bin/sim}"
