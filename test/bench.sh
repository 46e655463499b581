#!/usr/bin/env bash
# make bench: whole-process timings of gpuprep-gres on the simulated 8-GPU
# node, with hyperfine (Debian package hyperfine) and GNU time for peak RSS.
# Results go to stdout; docs/BENCHMARKS.md records them with the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
# hyperfine and GNU time (/usr/bin/time): installed with apt-get when root,
# saying so; otherwise the command to run.
need=()
command -v hyperfine >/dev/null || need+=(hyperfine)
[ -x /usr/bin/time ] || need+=(time)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "bench: installing Debian packages ${need[*]} (apt-get install ${need[*]}; remove them with apt-get remove ${need[*]})" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >/dev/null
  else
    echo "bench: missing ${need[*]}: run apt-get install ${need[*]} as root" >&2; exit 1
  fi
fi
root=$(mktemp -d /tmp/gpuprep-bench.XXXXXX)
trap 'rm -rf "$root"' EXIT
tar xzf test/roots/dgxh100.tar.gz -C "$root"
g="${BIN:-bin/sim}/gpuprep-gres --root $root"
RUNS_SHOWN=${RUNS:-100}
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
hyperfine -N -i --warmup 5 --runs ${RUNS:-100} --export-csv "$root/gres.csv" \
  -n 'gres (procfs backend)' "$g --gpu-backend procfs" \
  -n 'gres (mock:dgxh100)' "$g --gpu-backend mock:dgxh100" \
  -n 'gres --format table (mock:dgxh100)' "$g --gpu-backend mock:dgxh100 --format table" \
  -n 'gres --check mismatch (mock:dgxh100)' "$g --gpu-backend mock:dgxh100 --check examples/gres.conf.mistakes" \
  -n '/bin/true (process floor)' "/bin/true"
echo
echo "whole-process times (ms), $RUNS_SHOWN runs each:"
awk -F, 'NR>1 {printf "  %-42s median %6.1f  mean %6.1f  min %6.1f  max %6.1f\n", $1, $4*1000, $2*1000, $7*1000, $8*1000}' "$root/gres.csv"
for b in procfs mock:dgxh100; do
  /usr/bin/time -f "peak RSS, gres --gpu-backend $b: %M KiB" $g --gpu-backend $b >/dev/null
done
