#!/bin/bash
# MPS through gpuprep on a real GPU node (issue 23): the prolog starts the
# MPS control daemon for a job that asks for it, two clients of the job run
# through it (mps.py: alone, two time-sliced, two through MPS), the epilog
# quits it, and nothing of MPS is left. It changes no GPU setting: the
# profile sets only mps (no compute mode, clocks or persistence), and the
# daemon is a process.
#
#   sudo gpunode/mps-proof.sh OUTDIR     # GPU=0 picks the GPU (Slurm index)
#   sudo MPS_USER=gpuprep-mps gpunode/mps-proof.sh OUTDIR
#
# With MPS_USER the job is that user's (made, with no home and no login,
# when missing): the pipe directory stays root's and the user gets search
# access through an ACL entry (issue 30); the ranks run as the user
# (runuser), the MPS server must run as the user, the pipe directory's
# files are listed before and after the clients (the daemon makes them
# all at start), and the user's attempts to plant, replace, remove or
# list in it must fail.
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
job_user=root
as_user=()
if [ -n "${MPS_USER:-}" ]; then
	id -u "$MPS_USER" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$MPS_USER" ||
		{ echo "FAIL useradd $MPS_USER" >>"$summary"; exit 1; }
	job_user=$MPS_USER
	as_user=(runuser -u "$MPS_USER" --)
	# The user runs the kit's programs: copy them where any user may.
	kit=$(mktemp -d /tmp/gpuprep-mps-kit.XXXXXX)
	cp -r "$BIN" "$kit/bin" && cp "$here/mps.py" "$kit/" && chmod -R a+rX "$kit"
	BIN=$kit/bin
	trap 'rm -rf "$state" "$kit"' EXIT
fi
export SLURM_CONF=$state/slurm.conf SLURM_JOB_ID=23 SLURM_JOB_USER=$job_user SLURM_JOB_UID=$(id -u "$job_user") \
	SLURM_JOB_GID=$(id -g "$job_user") SLURM_JOB_GPUS=$GPU SLURMD_NODENAME=$(hostname -s)
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
"${as_user[@]}" "${task[@]}" "$BIN/srunwrap" --explain --tasks 1 2>&1 | tee "$out/explain.txt"
"${as_user[@]}" "${task[@]}" "$BIN/srunwrap" -- sh -c 'env | grep -E "^CUDA_(MPS|VISIBLE)" | sort' 2>&1 | tee "$out/rank-env.txt"
grep -q '^CUDA_MPS_PIPE_DIRECTORY=/run/gpuprep/mps/' "$out/rank-env.txt"
verdict "srunwrap sets CUDA_MPS_PIPE_DIRECTORY" $?

echo "== two clients: alone, time-sliced, through gpuprep's daemon"
pipe=$(sed -n 's/^CUDA_MPS_PIPE_DIRECTORY=//p' "$out/rank-env.txt")
# Every file of the pipe and log directories: mode, owner, type (the
# daemon's FIFO "log" among them), and the pipe directory's ACL.
list_dirs() { [ -n "$pipe" ] && find "$(dirname "$pipe")" -mindepth 1 -exec stat -c '%A %U:%G %F %n' {} + 2>&1; }
list_dirs >"$out/files-before.txt"
python3 -c 'import os,sys; print(os.getxattr(sys.argv[1], "system.posix_acl_access").hex())' "$pipe" >"$out/pipe-acl.txt" 2>&1
script=$here/mps.py; [ -n "${kit:-}" ] && script=$kit/mps.py
"${as_user[@]}" "${task[@]}" "$BIN/srunwrap" -- python3 "$script" ${MPS_ARGS:-} >"$out/mps.json" 2>"$out/mps.err" &
client=$!
# The MPS server the clients got: its user must be the job's.
for _ in $(seq 100); do servers=$(mps_procs | awk '$4 ~ /server/ || $5 ~ /nvidia-cuda-mps-server/ {print $1}'); [ -n "$servers" ] && break; sleep 0.2; done
for s in $servers; do ps -o pid=,user=,args= -p "$s"; done | tee "$out/servers.txt"
wait $client
rc=$?
list_dirs >"$out/files-after.txt"
if [ -n "${MPS_USER:-}" ]; then
	awk '{print $2}' "$out/servers.txt" | grep -qx "$MPS_USER"
	verdict "the MPS server runs as $MPS_USER" $?
	diff "$out/files-before.txt" "$out/files-after.txt" >"$out/files-diff.txt"
	verdict "no file appeared in the daemon's directories while the clients ran" $?
	: >"$out/attacks.txt"
	for a in "mkdir -p $pipe/d/d/d" "ln -s /etc/shadow $pipe/planted" "rm -f $pipe/nvidia-cuda-mps-control.pid" "ls $pipe" "touch $pipe/fill"; do
		if "${as_user[@]}" sh -c "$a" >>"$out/attacks.txt" 2>&1; then
			echo "FAIL $MPS_USER could: $a" >>"$summary"
		else
			echo "PASS $MPS_USER could not: $a" >>"$summary"
		fi
	done
fi
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
