#!/usr/bin/env bash
# Part of make bench: gpuprep-prolog and gpuprep-epilog whole-process times on
# the simulated 8-GPU node (test/hookbench.py), then what users feel in a real
# Slurm: srun -n1 true with gpuprep hooks against `exit 0` hooks, interleaved
# (test/e2e/srun_overhead_test.go, built with -tags bench; needs root).
set -euo pipefail
cd "$(dirname "$0")/.."
# The simulated sysfs on tmpfs when there is one (a real sysfs is in memory);
# the spool under /tmp, on disk like /var/lib/gpuprep.
root=$(mktemp -d "$( [ -d /dev/shm ] && echo /dev/shm || echo /tmp )/gpuprep-bench.XXXXXX")
trap 'rm -rf "$root"' EXIT
tar xzf test/roots/dgxh100.tar.gz -C "$root"
# The node's gres.conf, where the prolog reads it to map SLURM_JOB_GPUS.
mkdir -p "$root/etc/slurm"
"${BIN:-bin/sim}/gpuprep-gres" --root "$root" --gpu-backend mock:dgxh100 > "$root/etc/slurm/gres.conf"
python3 test/hookbench.py "$root" "${RUNS:-40}" "${BIN:-bin/sim}"
# Per-job evidence ([evidence]): the same cycles with it off (first) and on
# (second), cycle by cycle on copies of the node: what reading the job's
# GPUs' counters at both ends and writing its record add.
root2=$(mktemp -d "$(dirname "$root")/gpuprep-bench2.XXXXXX")
trap 'rm -rf "$root" "$root2"' EXIT
cp -a "$root/." "$root2/"
echo "[evidence] off (first) and on (second):"
HOOKBENCH_PROFILE=$'[evidence]\nenabled = false\n' HOOKBENCH_PROFILE2=$'[evidence]\nenabled = true\n' \
  python3 test/hookbench.py "$root" "${RUNS:-40}" "${BIN:-bin/sim}" "$root2"
# Of that, keeping the record: open jobs/ and write one (fsyncs), on /tmp's disk.
CGO_CFLAGS=-Wno-deprecated-declarations ${GO:-go} test -run '^$' -bench BenchmarkOpenWrite -benchtime 200x ./lib/evidence/evfile | grep -E '^Benchmark'
if [ "$(id -u)" = 0 ]; then
  bash test/install-deps.sh # says what it installs, if anything
  CGO_CFLAGS=-Wno-deprecated-declarations go test -count=1 -tags bench -run TestSrunOverhead -v ./test/e2e 2>&1 | grep -E 'gpuprep adds|FAIL|ok'
fi
