#!/usr/bin/env bash
# Whole-process time of `gpuprep-prolog --health` (read-only, every GPU) on
# the simulated 8-GPU node: mock:dgxh100 over the dgxh100 fixture root with a
# kernel log of 5,000 records, and with the procfs backend (no NVML); and of
# `gpuprep-health --no-drain` (slurmd's HealthCheckProgram without its
# scontrol calls: the same checks, plus the locks, the Xid watermark and the
# health state written to the spool) on mock:dgxh100.
# RUNS=N (default 40). Needs bin/sim (make build).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(mktemp -d "$( [ -d /dev/shm ] && echo /dev/shm || echo /tmp )/gpuprep-health.XXXXXX")
trap 'rm -rf "$root"' EXIT
tar xzf test/roots/dgxh100.tar.gz -C "$root"
mkdir -p "$root/dev" "$root/proc/sys/kernel/random"
echo 11111111-2222-3333-4444-555555555555 > "$root/proc/sys/kernel/random/boot_id"
for i in $(seq 0 4999); do echo "6,$i,$((i * 1000)),-;usb 1-1: new high-speed USB device number $i"; done > "$root/dev/kmsg"
cfg=$(mktemp); trap 'rm -rf "$root" "$cfg"' EXIT
printf '[general]\nlog_file = ""\nmetrics_dir = ""\n[health]\nnvlinks = -1\nib_rate_gbps = 400\ndriver_min = "535"\n' > "$cfg"
bin=${BIN:-bin/sim}/gpuprep-prolog
hbin=${BIN:-bin/sim}/gpuprep-health
common=(--health --root "$root" --config "$cfg" --state-dir "$root/spool")
hcommon=(--no-drain --root "$root" --config "$cfg" --state-dir "$root/hspool" --gpu-backend mock:dgxh100)
runs=${RUNS:-40}
if command -v hyperfine >/dev/null; then
  hyperfine -N -w 5 -r "$runs" "$bin ${common[*]} --gpu-backend mock:dgxh100" "$bin ${common[*]} --gpu-backend procfs" "$hbin ${hcommon[*]}" "/bin/true"
else
  for backend in mock:dgxh100 procfs health; do
    python3 - "$runs" "$bin" "$backend" "${common[@]}" -- "$hbin" "${hcommon[@]}" <<'PY'
import statistics, subprocess, sys, time
runs, binary, backend = int(sys.argv[1]), sys.argv[2], sys.argv[3]
cut = sys.argv.index("--")
rest, health = sys.argv[4:cut], sys.argv[cut + 1:]
cmd = health if backend == "health" else [binary, *rest, "--gpu-backend", backend]
for _ in range(5):
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
ts = []
for _ in range(runs):
    t = time.perf_counter(); subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True); ts.append((time.perf_counter() - t) * 1000)
name = "gpuprep-health --no-drain (mock:dgxh100)" if backend == "health" else f"--health --gpu-backend {backend}"
print(f"{name}: median {statistics.median(ts):.1f} ms, mean {statistics.mean(ts):.1f} ms, min {min(ts):.1f} ms, max {max(ts):.1f} ms ({runs} runs)")
PY
  done
fi
# The checks' own time, as the report measures it (the first line).
for backend in mock:dgxh100 procfs; do "$bin" "${common[@]}" --gpu-backend "$backend" | head -1; done
# What the prolog pays to read the probes' saved verdict (an 8-GPU node's,
# 56 peer copies) at every job: lib/health's BenchmarkReadVerdict.
${GO:-go} test -run '^$' -bench BenchmarkReadVerdict -benchmem ./lib/health | grep -E '^Benchmark'
