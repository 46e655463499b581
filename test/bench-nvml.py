#!/usr/bin/env python3
"""Whole-process medians of gpuprep-prolog --dry-run with real NVML on a GPU
node, against nvmlprobe (NVML init + the job's GPU handles opened in
parallel + the reads the profile needs). Read-only: --dry-run changes
nothing. See docs/BENCHMARKS.md.

usage: bench-nvml.py BINDIR RUNS GPUS [OLD_PROLOG]
  BINDIR holds gpuprep-prolog and nvmlprobe; GPUS is SLURM_JOB_GPUS ("0,1").
"""
import os, statistics, subprocess, sys, tempfile, time

bindir, runs, gpus = sys.argv[1], int(sys.argv[2]), sys.argv[3]
old = sys.argv[4] if len(sys.argv) > 4 else None
state = tempfile.mkdtemp(prefix="gpuprep-bench-nvml-")
env = dict(os.environ, SLURM_JOB_ID="1", SLURM_JOB_USER="bench", SLURM_JOB_GPUS=gpus)
bus = sorted(os.listdir("/proc/driver/nvidia/gpus"))
idx = [int(i) for i in gpus.split(",")]
job_bus = [bus[i] for i in idx]

cmds = {
    "prolog --dry-run": [os.path.join(bindir, "gpuprep-prolog"), "--dry-run", "--state-dir", state],
    "probe (bus ids)": [os.path.join(bindir, "nvmlprobe")] + job_bus,
    "probe (indexes)": [os.path.join(bindir, "nvmlprobe"), "--by", "index"] + [str(i) for i in idx],
    "probe --all (bus ids)": [os.path.join(bindir, "nvmlprobe"), "--all"] + job_bus,
}
if old:
    cmds["old prolog --dry-run"] = [old, "--dry-run", "--state-dir", state]
times = {k: [] for k in cmds}
for name, c in cmds.items():  # warm up, and show what each prints
    p = subprocess.run(c, env=env, capture_output=True, text=True)
    print(f"# {name}: exit {p.returncode}; {(p.stdout + p.stderr).strip()[:600]}")
for _ in range(runs):
    for name, c in cmds.items():  # interleaved, so drift hits all alike
        t = time.perf_counter()
        subprocess.run(c, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times[name].append((time.perf_counter() - t) * 1000)
for name, ts in times.items():
    ts.sort()
    print(f"{name:24s} median {statistics.median(ts):6.1f} ms  min {ts[0]:6.1f}  max {ts[-1]:6.1f}  (n={len(ts)})")
p = statistics.median(times["prolog --dry-run"]); f = statistics.median(times["probe (bus ids)"])
print(f"ratio prolog/probe: {p / f:.2f}")
