#!/usr/bin/env bash
# Part of make bench: what irq_affinity adds to the hooks, on the simulated
# 8-GPU node given a large node's interrupts (test/mkirqs.sh: 64 MSI-X
# vectors per GPU and HCA, 1,024 device IRQs, and 256 other IRQs): the
# hooks with housekeeping_cpus alone and with irq_affinity too, on two
# copies of the node, cycle by cycle in turn (test/hookbench.py,
# whole-process medians), against issue 32's targets: at most 1.5x for a
# first apply and a restore, 1.25x where nothing changes.
set -euo pipefail
cd "$(dirname "$0")/.."
base=$(mktemp -d "$( [ -d /dev/shm ] && echo /dev/shm || echo /tmp )/gpuprep-bench.XXXXXX")
trap 'rm -rf "$base"' EXIT
root=$base/hk
mkdir -p "$root/etc/slurm"
tar xzf test/roots/dgxh100.tar.gz -C "$root"
"${BIN:-bin/sim}/gpuprep-gres" --root "$root" --gpu-backend mock:dgxh100 > "$root/etc/slurm/gres.conf"
bash test/mkirqs.sh "$root" 64 256
cp -a "$root" "$base/irq"
echo "$(grep -c ':' "$root/proc/interrupts") IRQs on the simulated node; first: housekeeping_cpus alone, second: housekeeping_cpus and irq_affinity"
hk=$'[profiles.default]\nhousekeeping_cpus = {cores_per_numa = 1}\n'
HOOKBENCH_PROFILE=$hk HOOKBENCH_PROFILE2="${hk}irq_affinity = true"$'\n' HOOKBENCH_TARGETS=1.5,1.25,1.25,1.5 \
  python3 test/hookbench.py "$root" "${RUNS:-20}" "${BIN:-bin/sim}" "$base/irq"
# The knob's own work in each of the four runs, in one process (no process
# start, no other knob): where the added time goes.
echo "irq_affinity's own work on that node, in-process (go test -bench 'IRQAffinityLargeNode|IRQFilesFloor' ./lib/knob):"
${GO:-go} test -run '^$' -bench 'IRQAffinityLargeNode|IRQFilesFloor' -benchmem ./lib/knob | grep -E '^Benchmark'
