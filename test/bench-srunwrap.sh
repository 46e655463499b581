#!/usr/bin/env bash
# Part of make bench: what srunwrap adds to each task's start, whole
# process, side by side in one hyperfine run (interleaving is hyperfine's
# per-command batches; run it on an idle machine):
#   /bin/true                          the process floor
#   execwrap /bin/true                 a do-nothing Go exec wrapper (test/execwrap)
#   srunwrap -- /bin/true              rank 3 of 8 on the simulated dgxh100, with
#                                      the node description the prolog writes
#   srunwrap -- /bin/true (sysfs)      the same without it (fallback discovery)
#   bind script -- /bin/true           where nvidia-smi exists: the usual per-rank
#                                      script (nvidia-smi topo -m, then numactl)
# The target: srunwrap's added cost (its median minus /bin/true's) at most
# 1.15x execwrap's, and peak RSS under 15 MB. Then NCCL_TOPO_FILE, which
# local rank 0 checks (issue 30), in a second hyperfine run of RUNS_TOPO:
#   rank 0, no NCCL_TOPO_FILE / a node-sized (about 12 KiB) topology /
#   16 MiB of the densest valid XML (<cpu/> lines; the most the check
#   took whole before) / a 1 GiB sparse one
# The target: under 50 ms for a rank whatever the file is.
# docs/BENCHMARKS.md has results.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin/sim}
RUNS=${RUNS:-300}
RUNS_TOPO=${RUNS_TOPO:-50}
command -v hyperfine >/dev/null || { echo "bench-srunwrap: needs hyperfine (apt-get install hyperfine)" >&2; exit 1; }
work=$(mktemp -d "$( [ -d /dev/shm ] && echo /dev/shm || echo /tmp )/gpuprep-bench-sw.XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/root
mkdir -p "$root" && tar xzf test/roots/dgxh100.tar.gz -C "$root"
mkdir -p "$root/etc/slurm"
"$BIN/gpuprep-gres" --root "$root" --gpu-backend mock:dgxh100 > "$root/etc/slurm/gres.conf"
# The prolog tags the description with the boot id (fixture roots have none).
mkdir -p "$root/proc/sys/kernel/random" && cat /proc/sys/kernel/random/boot_id > "$root/proc/sys/kernel/random/boot_id"
printf '[general]\nlog_file = ""\nmetrics_dir = ""\n' > "$work/g.toml"
# One prolog writes the node description (/run/gpuprep under the root).
SLURM_JOB_ID=1 SLURM_JOB_USER=alice SLURM_JOB_GPUS=0,1,2,3,4,5,6,7 \
  "$BIN/gpuprep-prolog" --root "$root" --gpu-backend mock:dgxh100 --config "$work/g.toml" --state-dir "$work/spool" >/dev/null
test -s "$root/run/gpuprep/node-description"
nodesc=$work/nodesc
cp -a "$root" "$nodesc" && rm -rf "$nodesc/run/gpuprep"
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$work/execwrap" ./test/execwrap
# Rank 3 of an 8-rank step on 8 GPUs, as slurmstepd sets it.
export SLURM_JOB_ID=1 SLURM_STEP_ID=0 SLURM_PROCID=3 SLURM_LOCALID=3 SLURM_NODEID=0 SLURM_NTASKS=8 \
  SLURM_STEP_TASKS_PER_NODE=8 SLURM_STEP_GPUS=0,1,2,3,4,5,6,7 SLURM_GPUS_ON_NODE=8 \
  CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 SLURMD_NODENAME=dgxh100-01
cmds=(-n '/bin/true (process floor)' '/bin/true'
      -n 'execwrap (do-nothing Go exec wrapper)' "$work/execwrap /bin/true"
      -n 'srunwrap (node description)' "$BIN/srunwrap -q --root $root -- /bin/true"
      -n 'srunwrap (sysfs fallback)' "$BIN/srunwrap -q --root $nodesc -- /bin/true")
if command -v nvidia-smi >/dev/null; then
  cmds+=(-n 'bind script (nvidia-smi topo -m per rank)' "bash test/bind-nvidia-smi.sh /bin/true")
fi
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
hyperfine -N --warmup 20 --runs "$RUNS" --export-csv "$work/sw.csv" "${cmds[@]}" >/dev/null
awk -F, 'NR>1 {gsub(/"/, "", $1); printf "  %-44s median %6.2f ms  min %6.2f  max %6.2f\n", $1, $4*1000, $7*1000, $8*1000; m[NR]=$4}
  END {floor=m[2]; ew=m[3]-floor; printf "  added cost: execwrap %.2f ms, srunwrap %.2f ms (%.2fx), sysfs fallback %.2f ms (%.2fx)\n", ew*1000, (m[4]-floor)*1000, (m[4]-floor)/ew, (m[5]-floor)*1000, (m[5]-floor)/ew
       if (m[6] != "") printf "  bind script %.2f ms added: srunwrap is %.1fx cheaper\n", (m[6]-floor)*1000, (m[6]-floor)/(m[4]-floor)}' "$work/sw.csv"
for v in "$root" "$nodesc"; do
  /usr/bin/time -f "  peak RSS, srunwrap --root $(basename "$v"): %M KiB" "$BIN/srunwrap" -q --root "$v" -- /bin/true
done

# NCCL_TOPO_FILE (resolved through --root, as the rank's mount namespace).
mkdir -p "$root/etc/nccl"
cpu='  <cpu numaid="0" affinity="ffffffff,ffffffff" arch="x86_64" vendor="GenuineIntel"/>'
topo() { awk -v n="$1" -v l="$2" 'BEGIN { print "<system version=\"1\">"; for (i = 0; i < n; i++) print l; print "</system>" }' > "$root/etc/nccl/$3"; }
topo 150 "$cpu" small.xml                                     # about 12 KiB
topo $(( (16 * 1024 * 1024 - 64) / 7 )) '<cpu/>' big.xml      # just under 16 MiB of the densest XML
topo 150 "$cpu" huge.xml && truncate -s 1G "$root/etc/nccl/huge.xml"  # 1 GiB, a hole after the start
rank0="env SLURM_PROCID=0 SLURM_LOCALID=0"
tcmds=(-n 'srunwrap rank 0: no NCCL_TOPO_FILE' "$rank0 $BIN/srunwrap -q --root $root -- /bin/true")
for f in small big huge; do
  tcmds+=(-n "srunwrap rank 0: NCCL_TOPO_FILE $(du -h --apparent-size "$root/etc/nccl/$f.xml" | cut -f1)" "$rank0 NCCL_TOPO_FILE=/etc/nccl/$f.xml $BIN/srunwrap -q --root $root -- /bin/true")
done
hyperfine -N --warmup 2 --runs "$RUNS_TOPO" --export-csv "$work/topo.csv" "${tcmds[@]}" >/dev/null
awk -F, 'NR>1 {gsub(/"/, "", $1); printf "  %-44s median %7.2f ms  min %7.2f  max %7.2f\n", $1, $4*1000, $7*1000, $8*1000}' "$work/topo.csv"
for f in small big huge; do
  SLURM_PROCID=0 SLURM_LOCALID=0 NCCL_TOPO_FILE=/etc/nccl/$f.xml \
    /usr/bin/time -f "  peak RSS, rank 0, NCCL_TOPO_FILE $f.xml: %M KiB" "$BIN/srunwrap" -q --root "$root" -- /bin/true
done
