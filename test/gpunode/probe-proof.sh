#!/bin/bash
# Issue 33's proof on a real GPU node, as root, with the kit of make
# gpunode-kit: gpuprep-health --probe five times (--no-drain: no Slurm
# here), its values against PyTorch's (probe_torch.py), then with another
# process loading the GPU: --probe must refuse it, --probe --force measure
# it and fail with the right code. It reads and loads the GPUs only: no
# clock, power, persistence, compute or MIG setting is changed.
#   gpunode/probe-proof.sh OUTDIR   (OUTDIR/probe-proof.tgz holds it all)
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
BIN=${BIN:-$here/bin}
out=${1:?usage: probe-proof.sh OUTDIR}
work=$(mktemp -d)
st=$work/spool
cfg=$work/probe.toml
printf '[general]\nlog_file = ""\n' > "$cfg"
probe() { "$BIN"/gpuprep-health --probe --no-drain --config "$cfg" --state-dir "$st" --node gpunode "$@"; }
{
	echo "== nvidia-smi"; nvidia-smi --query-gpu=name,pci.bus_id,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,pcie.link.gen.current,pcie.link.width.current --format=csv
	echo "== CUDA binding test"; "$BIN"/cuda.test -test.v 2>&1 | tail -30
} > "$work/env.txt" 2>&1
for i in 1 2 3 4 5; do
	/usr/bin/time -f "probe $i: %e s, %M KiB" -a -o "$work/times.txt" "$BIN"/gpuprep-health --probe --no-drain --json --config "$cfg" --state-dir "$st" --node gpunode > "$work/probe$i.json" 2> "$work/probe$i.err"
	echo "probe $i exit $?" >> "$work/times.txt"
done
probe > "$work/probe-text.txt" 2>&1
echo "probe text exit $?" >> "$work/times.txt"
node=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['verdict']['result']['gpus'][0]['numa_node'])" "$work/probe1.json" 2>/dev/null || echo -1)
if command -v numactl >/dev/null && [ "${node:--1}" -ge 0 ]; then
	numactl --membind="$node" python3 "$here/probe_torch.py" > "$work/torch.json" 2> "$work/torch.err"
else
	python3 "$here/probe_torch.py" > "$work/torch.json" 2> "$work/torch.err"
fi
echo "torch exit $? (GPU NUMA node $node)" >> "$work/times.txt"
python3 "$here/probe_torch.py" --load 120 2> "$work/load.err" &
loader=$!
sleep 15
probe > "$work/busy.txt" 2>&1
echo "busy exit $?" >> "$work/times.txt"
probe --force > "$work/forced.txt" 2>&1
echo "forced exit $?" >> "$work/times.txt"
probe --force --json > "$work/forced.json" 2>&1
kill "$loader"; wait "$loader" 2>/dev/null
mkdir -p "$out"
tar czf "$out/probe-proof.tgz" -C "$work" .
cat "$work/times.txt" "$work/probe-text.txt"
