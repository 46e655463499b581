#!/usr/bin/env bash
# make demo: gpuprep on a simulated GPU node. The node is a fixture root (a
# DGX H100-like sysfs/procfs tree, test/roots/dgxh100.tar.gz) with go-nvml's
# DGX H100 mock server as its GPUs, so it runs anywhere, no GPU needed.
set -euo pipefail
cd "$(dirname "$0")/.."
node=${DEMO_NODE:-dgxh100}
backend=${DEMO_BACKEND:-mock:$node}
root=$(mktemp -d /tmp/gpuprep-demo.XXXXXX)
trap 'rm -rf "$root"' EXIT
tar xzf "test/roots/$node.tar.gz" -C "$root"
gres=(bin/gpuprep-gres --root "$root" --gpu-backend "$backend")

step() { printf '\n\033[1m== %s\033[0m\n$ %s\n' "$1" "$2"; }

step "The simulated node: GPUs, NUMA nodes, Slurm cores, nearest NICs, NVLinks" \
  "gpuprep-gres --format table"
"${gres[@]}" --format table

step "gres.conf for it (Cores= are Slurm core ids, not OS CPU ids)" "gpuprep-gres > gres.conf"
"${gres[@]}" | tee "$root/gres.conf"

step "The matching slurm.conf node line" "gpuprep-gres --format slurm"
"${gres[@]}" --format slurm

step "Checking the generated file against the hardware" "gpuprep-gres --check gres.conf"
"${gres[@]}" --check "$root/gres.conf"

step "Checking a hand-written gres.conf with classic mistakes (exit 1)" \
  "gpuprep-gres --check examples/gres.conf.mistakes"
set +e
"${gres[@]}" --check examples/gres.conf.mistakes
echo "exit status: $?"
set -e

step "A node whose NUMA nodes are smaller than its sockets (AMD NPS4, DGX A100-like, one GPU in MIG mode)" \
  "gpuprep-gres --format table (dgxa100)"
root2=$(mktemp -d /tmp/gpuprep-demo.XXXXXX)
trap 'rm -rf "$root" "$root2"' EXIT
tar xzf test/roots/dgxa100.tar.gz -C "$root2"
bin/gpuprep-gres --root "$root2" --gpu-backend mock:dgxa100 --format table

step "The fix it suggests: NUMA nodes as sockets in the node line" \
  "gpuprep-gres --format slurm --numa-as-socket (dgxa100)"
bin/gpuprep-gres --root "$root2" --gpu-backend mock:dgxa100 --format slurm --numa-as-socket

printf '\nProlog, epilog and srunwrap join this demo as their issues land.\n'
