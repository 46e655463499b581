#!/bin/bash
# MPS through gpuprep on a real GPU node (issue 23): the prolog starts the
# MPS control daemon for a job that asks for it, two clients of the job run
# through it (mps.py: alone, two time-sliced, two through MPS), the epilog
# quits it, and nothing of MPS is left. It changes no GPU setting: the
# profile sets only mps (no compute mode, clocks or persistence), and the
# daemon is a process.
#
#   sudo gpunode/mps-proof.sh OUTDIR     # GPU=0 picks the GPU (Slurm index)
#
# OUTDIR gets the hooks' output, where the daemon ran (its cgroup), what
# srunwrap set, mps.json, what was left after the epilog, and summary.txt
# (one PASS/FAIL line per check).
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
BIN=${BIN:-$here/bin}
GPU=${GPU:-0}
out=${1:?usage: mps-proof.sh OUTDIR}
mkdir -p "$out"
summary=$out/summary.txt
: >"$summary"
verdict() { if [ "$2" = 0 ]; then echo "PASS $1" >>"$summary"; else echo "FAIL $1" >>"$summary"; fi; }
state=$(mktemp -d /tmp/gpuprep-mps.XXXXXX)
trap 'rm -rf "$state"' EXIT

"$BIN/gpuprep-gres" --gpu-backend nvml >"$state/gres.conf"
: >"$state/slurm.conf"
cat >"$state/gpuprep.toml" <<TOML
[general]
log_file = ""
[selection]
default_profile = "shared"
[profiles.shared]
mps = true
TOML
export SLURM_CONF=$state/slurm.conf SLURM_JOB_ID=23 SLURM_JOB_USER=root SLURM_JOB_UID=0 SLURM_JOB_GID=0 \
	SLURM_JOB_GPUS=$GPU SLURMD_NODENAME=$(hostname -s)
hook=(--gpu-backend nvml --config "$state/gpuprep.toml" --state-dir "$state/spool")

echo "== prolog --dry-run, then the prolog"
"$BIN/gpuprep-prolog" "${hook[@]}" --dry-run 2>&1 | tee "$out/prolog-dry-run.txt"
start=$(date +%s%N)
"$BIN/gpuprep-prolog" "${hook[@]}" >"$out/prolog.txt" 2>&1
rc=$?
echo "prolog: exit $rc, $(( ($(date +%s%N) - start) / 1000000 )) ms" | tee -a "$out/prolog.txt"
cat "$out/prolog.txt"
verdict "prolog starts the MPS daemon (exit $rc)" $rc
# The MPS processes: comm (15 characters) is nvidia-cuda-mps for the
# daemon and its servers alike.
mps_procs() { ps -eo pid=,ppid=,stat=,comm=,args= | awk '$4 ~ /^nvidia-cuda-mps/'; }
{
	for p in $(mps_procs | awk '$3 !~ /^Z/ {print $1}'); do
		echo "pid $p: $(tr '\0' ' ' </proc/$p/cmdline)"
		echo "  cgroup: $(cat /proc/$p/cgroup)"
		echo "  CUDA_VISIBLE_DEVICES=$(tr '\0' '\n' </proc/$p/environ | sed -n 's/^CUDA_VISIBLE_DEVICES=//p')"
	done
	ls -la /run/gpuprep/mps/*/ 2>&1
} | tee "$out/daemon.txt"
[ -n "$(mps_procs | awk '$3 !~ /^Z/')" ]
verdict "an nvidia-cuda-mps-control runs" $?

echo "== srunwrap for the job's rank"
task=(env SLURM_STEP_ID=0 SLURM_PROCID=0 SLURM_LOCALID=0 SLURM_NODEID=0 SLURM_NTASKS=1 SLURM_STEP_TASKS_PER_NODE=1
	SLURM_STEP_GPUS=$GPU CUDA_VISIBLE_DEVICES=$GPU)
"${task[@]}" "$BIN/srunwrap" --explain --tasks 1 2>&1 | tee "$out/explain.txt"
"${task[@]}" "$BIN/srunwrap" -- sh -c 'env | grep -E "^CUDA_(MPS|VISIBLE)" | sort' 2>&1 | tee "$out/rank-env.txt"
grep -q '^CUDA_MPS_PIPE_DIRECTORY=/run/gpuprep/mps/' "$out/rank-env.txt"
verdict "srunwrap sets CUDA_MPS_PIPE_DIRECTORY" $?

echo "== two clients: alone, time-sliced, through gpuprep's daemon"
"${task[@]}" "$BIN/srunwrap" -- python3 "$here/mps.py" ${MPS_ARGS:-} >"$out/mps.json" 2>"$out/mps.err"
rc=$?
cat "$out/mps.json"
verdict "mps.py ran (exit $rc)" $rc
python3 - "$out/mps.json" >>"$summary" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ok = r.get("mps_s") is not None and r["mps_s"] <= 1.15 * r["alone_s"]
print(("PASS" if ok else "FAIL") + f" two clients through MPS {r.get('mps_s')} s vs one alone {r['alone_s']} s (time-sliced {r['shared_s']} s)")
PY

echo "== epilog"
start=$(date +%s%N)
"$BIN/gpuprep-epilog" "${hook[@]}" >"$out/epilog.txt" 2>&1
rc=$?
echo "epilog: exit $rc, $(( ($(date +%s%N) - start) / 1000000 )) ms" | tee -a "$out/epilog.txt"
cat "$out/epilog.txt"
verdict "epilog (exit $rc)" $rc
{
	echo "MPS processes left (pid ppid stat comm args):"; mps_procs
	echo "/run/gpuprep/mps:"; ls -la /run/gpuprep/mps 2>&1
	echo "cgroups:"; ls -d /sys/fs/cgroup/gpuprep.mps/* 2>&1
} | tee "$out/left.txt"
[ -z "$(mps_procs | awk '$3 !~ /^Z/')" ]
verdict "no MPS process left running" $?
# A daemon that exited is a zombie until its parent reaps it: PID 1 on a
# node (the daemon left its starter with -d). Listed, not a failure.
zombies=$(mps_procs | awk '$3 ~ /^Z/ {print $1 " (parent " $2 ")"}')
[ -z "$zombies" ] || echo "NOTE exited MPS processes not yet reaped by their parent: $zombies" >>"$summary"
[ -z "$(ls -A /run/gpuprep/mps 2>/dev/null)" ]
verdict "no MPS directory left" $?
cat "$summary"
