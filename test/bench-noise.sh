#!/bin/bash
# bench-noise: does gpuprep's housekeeping_cpus keep noisy host services off a
# job's cores? Runs a GPU feeder loop (test/feeder.py) pinned to the job's
# CPUs four times and prints its step-time percentiles:
#   quiet     no host load
#   noisy     CPU hogs in a service cgroup, on every CPU
#   isolated  after gpuprep-prolog applied housekeeping_cpus (the hogs now on
#             the housekeeping CPUs only)
#   restored  after gpuprep-epilog (the hogs on every CPU again)
# and checks: isolated within 5% of quiet at p50 and 15% at p99; the hogs'
# Cpus_allowed_list is the housekeeping set after the prolog and every CPU
# after the epilog. Exit 0 when all hold, 1 when one does not, 2 when it
# cannot run here.
#
# Needs: root, cgroup v2 at /sys/fs/cgroup with the cpuset controller, a GPU,
# python3 with torch and numpy, and the built programs in bin/ (make build);
# not Go. Touches nothing of the node's own cgroups: gpuprep runs with --root
# on a directory whose sys/fs/cgroup is a bind mount of a throwaway subtree
#   /sys/fs/cgroup/gpuprep-bench-<pid>/{system.slice/{hog.service,
#       slurmstepd.scope/job_4242},user.slice,init.scope}
# and whose proc and sys/devices are bind mounts of the real ones (for the
# CPU topology). The GPU backend is none: no GPU setting is changed. Removed
# again on exit, failure or Ctrl-C.
#
# Settings (environment): HK housekeeping CPUs (default 0-3), JOB_CPUS the
# feeder's CPUs (default: every online CPU not in HK), HOGS number of hog
# processes (default: number of CPUs), STEPS feeder steps (default 1500),
# BIN folder of the programs (default bin), PYTHON (default python3).
set -euo pipefail

cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
PYTHON=${PYTHON:-python3}
HK=${HK:-0-3}
STEPS=${STEPS:-1500}
JOBID=4242
CG=/sys/fs/cgroup

die() { echo "bench-noise: $*" >&2; exit 2; }
say() { echo "bench-noise: $*" >&2; }

[[ $(id -u) == 0 ]] || die "must run as root (it makes cgroups and bind mounts)"
[[ $(stat -fc %T $CG) == cgroup2fs ]] || die "$CG is not cgroup v2 (found $(stat -fc %T $CG))"
grep -qw cpuset $CG/cgroup.controllers || die "$CG/cgroup.controllers lists no cpuset"
for p in gpuprep-prolog gpuprep-epilog; do
	[[ -x $BIN/$p ]] || die "$BIN/$p missing: run make build (or set BIN)"
done
$PYTHON -c 'import torch, numpy; assert torch.cuda.is_available()' 2>/dev/null ||
	die "$PYTHON cannot import torch and numpy, or sees no GPU"

ONLINE=$(cat /sys/devices/system/cpu/online)
# cpulist expands a CPU list ("0-3,8") to one id per line.
cpulist() { local IFS=,; for r in $1; do if [[ $r == *-* ]]; then seq "${r%-*}" "${r#*-}"; else echo "$r"; fi; done; }
# tolist joins ids (one per line, sorted) into a canonical CPU list.
tolist() { awk 'NR==1{s=p=$1;next} $1==p+1{p=$1;next} {o=o (o?",":"") (s==p?s:s"-"p); s=p=$1} END{if(NR) o=o (o?",":"") (s==p?s:s"-"p); print o}'; }
HK=$(cpulist "$HK" | sort -n | tolist)
ALL=$(cpulist "$ONLINE" | sort -n | tolist)
JOB_CPUS=${JOB_CPUS:-$(comm -23 <(cpulist "$ONLINE" | sort) <(cpulist "$HK" | sort) | sort -n | tolist)}
[[ -n $JOB_CPUS ]] || die "no CPUs left for the job beside HK=$HK"
NCPU=$(cpulist "$ONLINE" | wc -l)
HOGS=${HOGS:-$NCPU}

BENCH=$CG/gpuprep-bench-$$
SVC=$BENCH/system.slice/hog.service
JOBCG=$BENCH/system.slice/slurmstepd.scope/job_$JOBID
WORK=$(mktemp -d /tmp/gpuprep-bench-work.XXXXXX)
ROOT=$(mktemp -d /tmp/gpuprep-bench-root.XXXXXX)
MOUNTS=()
HOG_PIDS=()

cleanup() {
	local rc=$?
	set +e
	trap - EXIT INT TERM
	if ((${#HOG_PIDS[@]})); then
		kill -9 "${HOG_PIDS[@]}" 2>/dev/null
		wait "${HOG_PIDS[@]}" 2>/dev/null # reaped quietly: no "Killed" lines
	fi
	if [[ -e $SVC/cgroup.kill ]]; then echo 1 >"$SVC/cgroup.kill" 2>/dev/null; fi
	if [[ -e $JOBCG/cgroup.kill ]]; then echo 1 >"$JOBCG/cgroup.kill" 2>/dev/null; fi
	sleep 0.5
	local i
	for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
		umount "${MOUNTS[i]}" 2>/dev/null || umount -l "${MOUNTS[i]}" || say "could not unmount ${MOUNTS[i]}"
	done
	for d in "$JOBCG" "$BENCH/system.slice/slurmstepd.scope" "$SVC" "$BENCH/system.slice" "$BENCH/user.slice" "$BENCH/init.scope" "$BENCH"; do
		[[ -d $d ]] && { rmdir "$d" 2>/dev/null || say "could not remove cgroup $d"; }
	done
	# The root holds only mount points: rmdir, never rm -r, so that a mount
	# left behind is never recursed into.
	for d in "$ROOT/sys/fs/cgroup" "$ROOT/sys/fs" "$ROOT/sys/devices" "$ROOT/sys" "$ROOT/proc" "$ROOT"; do
		[[ -d $d ]] && rmdir "$d" 2>/dev/null
	done
	[[ -d $ROOT ]] && say "left $ROOT behind (a mount could not be removed)"
	rm -rf "$WORK"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The throwaway cgroup tree, laid out as systemd and Slurm's cgroup/v2
# plugin lay out a node. cpuset is enabled down to the job's cgroup (as
# Slurm does), not below system.slice's units: gpuprep enables what it needs.
grep -qw cpuset $CG/cgroup.subtree_control || { say "enabling cpuset in $CG/cgroup.subtree_control (left on)"; echo +cpuset >$CG/cgroup.subtree_control; }
mkdir -p "$SVC" "$JOBCG" "$BENCH/user.slice" "$BENCH/init.scope"
echo +cpuset >"$BENCH/cgroup.subtree_control"
echo +cpuset >"$BENCH/system.slice/cgroup.subtree_control"
echo +cpuset >"$BENCH/system.slice/slurmstepd.scope/cgroup.subtree_control"

mkdir -p "$ROOT/sys/fs/cgroup" "$ROOT/sys/devices" "$ROOT/proc"
for m in "$BENCH:$ROOT/sys/fs/cgroup" "/proc:$ROOT/proc" "/sys/devices:$ROOT/sys/devices"; do
	mount --bind "${m%%:*}" "${m#*:}"
	MOUNTS+=("${m#*:}")
done

cat >"$WORK/gpuprep.toml" <<TOML
[general]
state_dir = "$WORK/state"
log_file = ""
metrics_dir = ""
gpu_backend = "none"
[health] # this measures isolation only
prolog = false
epilog = false
[profiles.default]
housekeeping_cpus = "$HK"
TOML
hook() {
	"$BIN/gpuprep-$1" --root "$ROOT" --config "$WORK/gpuprep.toml" --state-dir "$WORK/state" \
		--gpu-backend none --job-id $JOBID --job-user root --log-level info
}

# feeder TAG: runs the feeder in the job's cgroup, pinned to the job's CPUs;
# prints its line and keeps "p50 p99" in $WORK/TAG.
feeder() {
	local out
	out=$(TAG=$1 sh -c 'echo $$ >"$1/cgroup.procs" && exec taskset -c "$2" "$3" test/feeder.py "$4"' sh "$JOBCG" "$JOB_CPUS" "$PYTHON" "$STEPS")
	echo "$out"
	sed -E 's/.*p50=([0-9.]+) p99=([0-9.]+).*/\1 \2/' <<<"$out" >"$WORK/$1"
}
hogs() {
	local i
	for ((i = 0; i < HOGS; i++)); do
		sh -c 'echo $$ >"$1/cgroup.procs" && exec sh -c "while :; do :; done"' sh "$SVC" &
		HOG_PIDS+=($!)
	done
	sleep 0.5
}
# hog_cpus: every hog's Cpus_allowed_list, one line per distinct value.
hog_cpus() { for p in "${HOG_PIDS[@]}"; do awk '/^Cpus_allowed_list/{print $2}' /proc/$p/status; done | sort -u; }

FAIL=0
check() { if eval "$2"; then echo "  ok    $1"; else echo "  FAIL  $1"; FAIL=1; fi; }

echo "housekeeping CPUs $HK, job CPUs $JOB_CPUS, $HOGS hogs, $STEPS steps"
feeder quiet
hogs
check "hogs on every CPU before the prolog ($(hog_cpus | paste -sd' '))" '[[ $(hog_cpus) == "$ALL" ]]'
feeder noisy
hook prolog || { echo "gpuprep-prolog failed" >&2; exit 1; }
echo "  hog.service cpuset.cpus = $(cat "$SVC/cpuset.cpus"), job cgroup cpuset.cpus = '$(cat "$JOBCG/cpuset.cpus")'"
check "hogs on $HK after the prolog ($(hog_cpus | paste -sd' '))" '[[ $(hog_cpus) == "$HK" ]]'
feeder isolated
hook epilog || { echo "gpuprep-epilog failed" >&2; exit 1; }
check "hogs on every CPU after the epilog ($(hog_cpus | paste -sd' '))" '[[ $(hog_cpus) == "$ALL" ]]'
feeder restored

read -r q50 q99 <"$WORK/quiet"
read -r i50 i99 <"$WORK/isolated"
read -r n50 n99 <"$WORK/noisy"
within() { awk -v a="$1" -v b="$2" -v f="$3" 'BEGIN{exit !(a <= b*f)}'; }
check "isolated p50 $i50 ms within 5% of quiet $q50 ms (noisy $n50)" 'within "$i50" "$q50" 1.05'
check "isolated p99 $i99 ms within 15% of quiet $q99 ms (noisy $n99)" 'within "$i99" "$q99" 1.15'
if ((FAIL)); then echo "bench-noise: FAIL"; exit 1; fi
echo "bench-noise: PASS"
