#!/usr/bin/env bash
# make bench-step: the step a prolog's duration makes in a job's start on
# this machine's Slurm (test/e2e TestPrologStep, -tags bench; root):
# srun -n1 true with a prolog that only sleeps 20..120 ms in 5 ms steps,
# against one sleeping 0. docs/BENCHMARKS.md records the curve and why.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "bench-step: needs root (a real Slurm)" >&2; exit 1; }
bash test/install-deps.sh
slurmd -V
CGO_CFLAGS=-Wno-deprecated-declarations go test -count=1 -tags bench -timeout 60m -run TestPrologStep -v ./test/e2e 2>&1 | grep -E 'ms \||prolog sleep|FAIL|^ok'
