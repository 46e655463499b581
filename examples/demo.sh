#!/usr/bin/env bash
# make demo: gpuprep on a simulated GPU node. The node is a fixture root (a
# DGX H100-like sysfs/procfs tree, test/roots/dgxh100.tar.gz) with go-nvml's
# DGX H100 mock server as its GPUs, so it runs anywhere, no GPU needed.
# DEMO_NODE=dgxa100 or dgxb200 runs it on another simulated node (the
# fixture roots that have a go-nvml mock).
set -euo pipefail
# The programs built with the mock GPU backends (make build puts them in bin/sim).
bin=${BIN:-bin/sim}
cd "$(dirname "$0")/.."
node=${DEMO_NODE:-dgxh100}
backend=${DEMO_BACKEND:-mock:$node}
# Per node: the MIG layout its GPUs have (the admin's [mig.layout]), its
# model's whole-GPU MIG profile, and the Slurm index (gres.conf order) of a
# GPU without MIG devices, for the MIG steps; other_gpu is the Slurm index
# of a GPU other than GPU 0, for the health steps.
case $node in
dgxh100) mig_layout='all = []' mig_whole=7g.80gb whole_gpu=0 other_gpu=1 ;;
dgxa100) mig_layout=$'"0" = ["3g.20gb", "2g.10gb"]\nall = []' mig_whole=7g.40gb whole_gpu=2 other_gpu=2 ;;
dgxb200) mig_layout='all = []' mig_whole=7g.180gb whole_gpu=0 other_gpu=1 ;;
*)
  echo "demo: DEMO_NODE=$node: want dgxh100, dgxa100 or dgxb200 (the fixture roots in test/roots with a go-nvml mock)" >&2
  exit 2
  ;;
esac
[ -x "$bin/gpuprep-prolog" ] || { echo "demo: no $bin/gpuprep-prolog: run make build first" >&2; exit 2; }
root=$(mktemp -d /tmp/gpuprep-demo.XXXXXX)
trap 'rm -rf "$root"' EXIT
tar xzf "test/roots/$node.tar.gz" -C "$root"
# A real node's /dev/infiniband, which srunwrap's checks look for.
mkdir -p "$root/dev/infiniband" && for i in 0 1 2 3 4 5 6 7 8; do : > "$root/dev/infiniband/uverbs$i"; done
# The simulated node boots with this machine's boot id (the prolog tags the
# node description it writes for srunwrap with it).
mkdir -p "$root/proc/sys/kernel/random" && cat /proc/sys/kernel/random/boot_id > "$root/proc/sys/kernel/random/boot_id"
gres=("$bin"/gpuprep-gres --root "$root" --gpu-backend "$backend")

# Bold headings only on a terminal, and never with NO_COLOR set (no-color.org).
bold='' plain=''
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ] && [ "${TERM:-dumb}" != dumb ]; then
  bold=$'\033[1m' plain=$'\033[0m'
fi
current=""
step() { current=$1; printf '\n%s== %s%s\n$ %s\n' "$bold" "$1" "$plain" "$2"; }
# A step that fails stops the demo and says which; the command's own
# output above it says why (no step throws a failing command's stderr away).
trap 'rc=$?; printf "\ndemo: failed (exit %d, line %d) in step: %s\n" "$rc" "$LINENO" "${current:-setup}" >&2' ERR

step "The simulated node: GPUs, NUMA nodes, Slurm cores, nearest NICs, NVLinks" \
  "gpuprep-gres --format table"
"${gres[@]}" --format table

step "gres.conf for it (Cores= are Slurm core ids, not OS CPU ids)" "gpuprep-gres > /etc/slurm/gres.conf"
# Installed where slurmd reads it; the prolog reads it too, to map
# SLURM_JOB_GPUS (positions in its File= list) to the job's GPUs.
mkdir -p "$root/etc/slurm"
"${gres[@]}" | tee "$root/etc/slurm/gres.conf"

step "The matching slurm.conf node line" "gpuprep-gres --format slurm"
"${gres[@]}" --format slurm

step "Checking the generated file against the hardware" "gpuprep-gres --check /etc/slurm/gres.conf"
"${gres[@]}" --check "$root/etc/slurm/gres.conf"

step "Checking a hand-written gres.conf with classic mistakes (exit 1)" \
  "gpuprep-gres --check examples/gres.conf.mistakes"
rc=0
"${gres[@]}" --check examples/gres.conf.mistakes || rc=$?
echo "exit status: $rc"
[ "$rc" -eq 1 ] # the expected mismatch; anything else stops the demo

step "A node whose NUMA nodes are smaller than its sockets (AMD NPS4, DGX A100-like, one GPU in MIG mode)" \
  "gpuprep-gres --format table (dgxa100)"
root2=$(mktemp -d /tmp/gpuprep-demo.XXXXXX)
trap 'rm -rf "$root" "$root2"' EXIT
tar xzf test/roots/dgxa100.tar.gz -C "$root2"
"$bin"/gpuprep-gres --root "$root2" --gpu-backend mock:dgxa100 --format table

step "Its node line counts sockets as slurmd will: real sockets while the node's slurm.conf has no SlurmdParameters (what slurmd -C says)" \
  "gpuprep-gres --format slurm (dgxa100, no slurm.conf)"
"$bin"/gpuprep-gres --root "$root2" --gpu-backend mock:dgxa100 --format slurm

step "With SlurmdParameters=numa_node_as_socket in the node's slurm.conf, NUMA nodes as sockets (each GPU's cores are then whole sockets)" \
  "gpuprep-gres --format slurm (dgxa100, /etc/slurm/slurm.conf: SlurmdParameters=numa_node_as_socket)"
mkdir -p "$root2/etc/slurm" && printf 'ClusterName=demo\nSlurmdParameters=numa_node_as_socket\n' >"$root2/etc/slurm/slurm.conf"
"$bin"/gpuprep-gres --root "$root2" --gpu-backend mock:dgxa100 --format slurm

# --- A job's life: prolog, a drift, epilog -------------------------------
spool=$(mktemp -d /tmp/gpuprep-demo-spool.XXXXXX)
trap 'rm -rf "$root" "$root2" "$spool"' EXIT
mkdir -p "$spool/textfile"
# quiet CMD...: runs CMD with its log lines (stderr) held back, and prints
# them when CMD fails.
quiet() {
  local rc=0
  "$@" 2>"$spool/stderr.txt" || rc=$?
  [ "$rc" -eq 0 ] || cat "$spool/stderr.txt" >&2
  return "$rc"
}
# show PATTERN CMD...: runs CMD and prints the lines of its output (log lines
# included) that match PATTERN; when CMD fails or no line matches, it prints
# all of it, so a failing step says why.
show() {
  local pat=$1 rc=0
  shift
  "$@" >"$spool/out.txt" 2>&1 || rc=$?
  if [ "$rc" -eq 0 ] && grep -E -- "$pat" "$spool/out.txt"; then
    return 0
  fi
  cat "$spool/out.txt" >&2
  return $((rc ? rc : 1))
}
cat >"$spool/gpuprep.toml" <<TOML
[general]
log_file = ""
metrics_dir = "$spool/textfile"
# The demo tells a dead job at once; the built-in 5m covers the gap
# between a job's prolog and its first step.
dead_job_grace = "0s"
[mig.layout]
# The admin's MIG layout, as this node's GPUs have it (checked per job).
$mig_layout
[selection]
default_profile = "isolated"
[profiles.isolated]
inherits = "default"
# Host services on one whole core (both SMT threads) per NUMA node.
housekeeping_cpus = {cores_per_numa = 1}
# Device interrupts on their NUMA node's housekeeping core; others off the
# jobs' cores.
irq_affinity = true
TOML
# The simulated node's interrupts (the capture has none): two MSI-X vectors
# for each GPU and HCA (numbered from 100), a serial port (4) and a NIC
# queue (30) on every CPU, and an NVMe queue (40) the kernel manages.
bash test/mkirqs.sh "$root" 2 2
# The simulated node's cgroup v2 tree as systemd lays it out: host services
# in system.slice beside Slurm's slurmstepd.scope, user.slice, init.scope.
cg="$root/sys/fs/cgroup"
mkcg() {
  local d
  for d in "$@"; do
    mkdir -p "$cg/$d"
    echo "cpuset cpu memory pids" >"$cg/$d/cgroup.controllers"
    : >"$cg/$d/cgroup.subtree_control"; : >"$cg/$d/cpuset.cpus"; : >"$cg/$d/cgroup.procs"
  done
}
mkdir -p "$cg"
echo "cpuset cpu io memory pids" >"$cg/cgroup.controllers"
echo "cpuset cpu memory pids" >"$cg/cgroup.subtree_control"
mkcg system.slice system.slice/cron.service system.slice/rsyslog.service system.slice/slurmd.service \
  system.slice/slurmstepd.scope user.slice init.scope
echo "cpuset cpu memory pids" >"$cg/system.slice/cgroup.subtree_control"
# Slurm's cgroup v2 tree on the simulated node: slurmstepd keeps a
# job_<id> folder for every running job (PrologFlags=Contain).
scope="$root/sys/fs/cgroup/system.slice/slurmstepd.scope"
mkdir -p "$scope"
hook=(--root "$root" --gpu-backend "$backend" --config "$spool/gpuprep.toml" --state-dir "$spool/state")
# What slurmd gives the hooks for job 4242 on GPUs 0 and 1:
export SLURM_JOB_ID=4242 SLURM_JOB_USER=alice SLURM_JOB_UID=65534 SLURM_JOB_GPUS=0,1 SLURMD_NODENAME=dgxh100-01
gov="$root/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"

step "The node line with CpuSpecList=: Slurm keeps job tasks off the housekeeping CPUs that gpuprep confines services to" \
  "gpuprep-gres --format slurm --config /etc/gpuprep/gpuprep.toml"
"${gres[@]}" --format slurm --config "$spool/gpuprep.toml"

step "Before installing a config: is it valid, and would the prolog pass on this node (profiles against its GPUs, each GPU's MIG layout, health)?" \
  "gpuprep-prolog --check-config"
"$bin"/gpuprep-prolog --root "$root" --gpu-backend "$backend" --config "$spool/gpuprep.toml" --check-config 2>&1

# The simulated GPUs at work from now on (the mock's counters run at these
# rates, so the prolog and the epilog read a plausible job whenever they
# run): GPU 0 draws 690 W and sits at its power limit 34% of the time,
# GPU 1 draws 410 W and is held down by heat (hardware slowdown) 12%.
uuid_of() { sed -n 's/^GPU UUID:[[:space:]]*//p' "$root/proc/driver/nvidia/gpus/$(cd "$root/proc/driver/nvidia/gpus" && ls | sed -n "$(($1 + 1))p")/information"; }
since=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
mkdir -p "$root/run/gpuprep-mock"
printf '{"rates": {"energy_mj": 690000, "power_cap_ns": 340000000}, "since": "%s"}\n' "$since" >"$root/run/gpuprep-mock/$(uuid_of 0).counters.json"
printf '{"rates": {"energy_mj": 410000, "hw_thermal_ns": 120000000}, "since": "%s"}\n' "$since" >"$root/run/gpuprep-mock/$(uuid_of 1).counters.json"

step "Job 4242 starts: the prolog's plan for the default profile" "gpuprep-prolog --dry-run"
quiet "$bin"/gpuprep-prolog "${hook[@]}" --dry-run

step "The prolog applies it (journal first; the log names every change)" "gpuprep-prolog"
echo "cpu0 governor before: $(cat "$gov")"
"$bin"/gpuprep-prolog "${hook[@]}"
echo "cpu0 governor now:    $(cat "$gov")"
echo "cron.service cpuset.cpus: $(cat "$cg/system.slice/cron.service/cpuset.cpus"); the job's cgroup: untouched"
dev100=$(dirname "$(dirname "$(ls "$root"/sys/bus/pci/devices/*/msi_irqs/100)")") # the device raising IRQ 100
echo "IRQ 100 (device ${dev100##*/}, NUMA node $(cat "$dev100/numa_node")): $(cat "$root/proc/irq/100/smp_affinity_list"); IRQ 4 (serial): $(cat "$root/proc/irq/4/smp_affinity_list"); IRQ 40 (NVMe, kernel-managed): $(cat "$root/proc/irq/40/smp_affinity_list")"
echo "$(grep -vc '^#' "$root/run/gpuprep/irq-placed") IRQs placed, listed in /run/gpuprep/irq-placed (irqbalance's policy script bans these)"

step "The prolog also wrote the node description srunwrap reads: one small file, no sysfs walk and no NVML per rank" \
  "ls -l /run/gpuprep/node-description; head /run/gpuprep/node-description"
ls -l "$root/run/gpuprep/node-description" | awk '{print $1, $3, $5, "bytes"}'
grep -E '^(gpuprep-node|hostname|numa|gpu|gpu_pci|gpu_near|nic|nic_port|srunwrap) ' "$root/run/gpuprep/node-description" | head -12
echo "..."

step "A user runs 8 ranks on the 8 GPUs: each rank's GPU, CPUs, memory, HCA and NCCL variables, and where each came from" \
  "srunwrap --explain --tasks 8"
"$bin"/srunwrap --root "$root" --explain --tasks 8 | sed -n '1,14p'
echo "..."

step "Rank 1 of job 4242 (srun -n2 --gres=gpu:2 --cpu-bind=none srunwrap -v -- ...): bound by the real kernel, then exec'd" \
  "srunwrap -v -- sh -c 'grep -E \"Cpus_allowed_list|Mems_allowed_list\" /proc/self/status; env | grep -E \"^(CUDA|NCCL)\"'"
SLURM_STEP_ID=0 SLURM_PROCID=1 SLURM_LOCALID=1 SLURM_NODEID=0 SLURM_NTASKS=2 SLURM_STEP_TASKS_PER_NODE=2 \
  SLURM_STEP_GPUS=0,1 CUDA_VISIBLE_DEVICES=0,1 \
  "$bin"/srunwrap --root "$root" -v -- sh -c 'grep -E "Cpus_allowed_list|Mems_allowed_list" /proc/self/status; env | grep -E "^(CUDA|NCCL)" | sort'
echo "(this machine's real CPUs stand in for the simulated node's: the rank got its share of NUMA node 0's CPUs that exist here)"

step "During the job something turns NUMA balancing back on, a backup service starts on every CPU, and an irqbalance without gpuprep's policy script moves a GPU's interrupt" \
  "echo 1 > /proc/sys/kernel/numa_balancing; systemctl start backup.service; echo 0-223 > /proc/irq/101/smp_affinity_list"
echo 1 > "$root/proc/sys/kernel/numa_balancing"
mkcg system.slice/backup.service
echo 0-223 > "$root/proc/irq/101/smp_affinity_list"

step "Job 4242 ends: the epilog records the drift and restores the baseline" "gpuprep-epilog"
"$bin"/gpuprep-epilog "${hook[@]}"
echo "cpu0 governor after:  $(cat "$gov")"
echo "cron.service cpuset.cpus after: '$(cat "$cg/system.slice/cron.service/cpuset.cpus")' (every CPU again)"
echo "IRQ 100 after: $(cat "$root/proc/irq/100/smp_affinity_list"); /run/gpuprep/irq-placed: $([ -e "$root/run/gpuprep/irq-placed" ] && echo left || echo removed)"

step "Job 4242's user asks what its GPUs did (as the user, no root: the record is root's, readable by the job's uid through an ACL entry)" \
  "gpuprep-epilog --report --job 4242"
chmod 755 "$spool" && chmod 644 "$spool/gpuprep.toml" # as /etc/gpuprep is
as_user=(setpriv --reuid="$SLURM_JOB_UID" --regid="$SLURM_JOB_UID" --clear-groups)
"${as_user[@]}" "$bin"/gpuprep-epilog --config "$spool/gpuprep.toml" --state-dir "$spool/state" --report --job 4242 | sed -n '/^GPUs/,$p'
echo "another user (uid 65533) reading it: $("${as_user[@]/$SLURM_JOB_UID/65533}" "$bin"/gpuprep-epilog --config "$spool/gpuprep.toml" --state-dir "$spool/state" --report --job 4242 2>&1 >/dev/null | head -1 | cut -c1-150)"

step "Job 4243 (sbatch --comment gpuprep=turbo, a profile this site does not have) starts on GPU 2" \
  "gpuprep-prolog (job 4243)"
mkdir -p "$scope/job_4243"
SLURM_JOB_ID=4243 SLURM_JOB_GPUS=2 SLURM_JOB_COMMENT=gpuprep=turbo "$bin"/gpuprep-prolog "${hook[@]}" 2>&1 | sed 's/ applied=.*//'

step "Its rank 0 starts: srunwrap tells the user what the prolog decided (the prolog has no other way to reach them)" \
  "srun srunwrap -- python train.py (rank 0 of job 4243)"
SLURM_JOB_ID=4243 SLURM_STEP_ID=0 SLURM_PROCID=0 SLURM_LOCALID=0 SLURM_NODEID=0 SLURM_NTASKS=1 SLURM_STEP_TASKS_PER_NODE=1 \
  SLURM_STEP_GPUS=2 CUDA_VISIBLE_DEVICES=0 "$bin"/srunwrap --root "$root" -- true > "$spool/rank0.txt" 2>&1
grep -v 'locked-memory limit' "$spool/rank0.txt" || true
if grep -q 'locked-memory limit' "$spool/rank0.txt"; then
  echo "(left out: a warning that this demo machine's memlock limit is too low for InfiniBand)"
fi

step "Then slurmd crashes: job 4243's processes and cgroup are gone, its epilog never runs" "kill -9 slurmd"
rmdir "$scope/job_4243"
echo "cpu0 governor: $(cat "$gov") (job 4243 still holds it)"

step "The next job's prolog finds job 4243 dead (no cgroup) and releases it as its epilog would" \
  "gpuprep-prolog --dry-run (job 4244); gpuprep-prolog; gpuprep-epilog"
mkdir -p "$scope/job_4244"
export SLURM_JOB_ID=4244 SLURM_JOB_GPUS=3
quiet "$bin"/gpuprep-prolog "${hook[@]}" --dry-run | grep -E 'release|^prolog'
show 'releasing|prolog done' "$bin"/gpuprep-prolog "${hook[@]}" | sed 's/ applied=.*//'
rmdir "$scope/job_4244"
"$bin"/gpuprep-epilog "${hook[@]}" 2>&1 | sed 's/ restored=.*//'
echo "cpu0 governor after both: $(cat "$gov")"

step "MPS: the admin marks GPUs 4 and 5 for gres/mps; gpuprep-gres gives gres.conf their Name=mps lines and the node line mps:200" \
  "gpuprep-gres (with [gres] mps_gpus = [4, 5])"
printf '[gres]\nmps_gpus = [4, 5]\n' | cat - "$spool/gpuprep.toml" | sed '0,/^\[gres\]$/!{/^\[gres\]$/d}' >"$spool/mps.toml"
"${gres[@]}" --config "$spool/mps.toml" | grep -E '^Name=mps|GresTypes'
"${gres[@]}" --config "$spool/mps.toml" --format slurm | grep -oE 'Gres=[^ ]+'
# The simulated node's MPS: bin/sim/nvidia-cuda-mps-control plays NVIDIA's
# (its daemon is a process of this machine, gone within 10 minutes).
install -D -m 0755 "$bin/nvidia-cuda-mps-control" "$root/usr/bin/nvidia-cuda-mps-control"
mps=(env -u SLURM_JOB_GPUS SLURM_JOB_UID="$(id -u)" SLURM_JOB_GID="$(id -g)")

step "Job 4250 (srun --gres=mps:25: Slurm gives the prolog CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25 and the GPU as CUDA_VISIBLE_DEVICES=4): the prolog starts an MPS control daemon for alice on GPU 4 (on a node, in a systemd unit or a cgroup of its own; the simulated node has no cgroup file system, so here the demo's own, with a warning)" \
  "gpuprep-prolog --dry-run; gpuprep-prolog (job 4250)"
mkdir -p "$scope/job_4250"
export CUDA_VISIBLE_DEVICES=4 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25
SLURM_JOB_ID=4250 quiet "${mps[@]}" "$bin"/gpuprep-prolog "${hook[@]}" --dry-run | grep -E '^KNOB|^mps'
SLURM_JOB_ID=4250 show 'MPS control daemon|prolog done' "${mps[@]}" "$bin"/gpuprep-prolog "${hook[@]}" | sed -e 's/^time=[^ ]* //'
stat -c '%n: owner %U, mode %a (the job'"'"'s user may only search it: ACL user:%%s:--x)' "$root"/run/gpuprep/mps/*/pipe | sed -e "s|$root||" -e "s|%s|$(id -u)|"

step "Its rank: srunwrap points it at alice's daemon on its GPU, the GPU by UUID (MPS clients number GPUs from the daemon's)" \
  "srunwrap -- sh -c 'env | grep ^CUDA_' (rank 0 of job 4250)"
SLURM_JOB_ID=4250 SLURM_STEP_ID=0 SLURM_PROCID=0 SLURM_LOCALID=0 SLURM_NODEID=0 SLURM_NTASKS=1 SLURM_STEP_TASKS_PER_NODE=1 \
  SLURM_STEP_GPUS=4 quiet "${mps[@]}" "$bin"/srunwrap --root "$root" -- sh -c 'env | grep -E "^CUDA_(MPS_PIPE|MPS_LOG|VISIBLE)" | sort' | sed "s|$root||g"

step "Job 4251 of another user (bob) on GPU 4: one MPS server serves one user at a time, so bob's job runs without MPS and is told why" \
  "gpuprep-prolog (job 4251, bob)"
mkdir -p "$scope/job_4251"
SLURM_JOB_ID=4251 SLURM_JOB_USER=bob show 'without MPS' "${mps[@]}" SLURM_JOB_UID=4244 "$bin"/gpuprep-prolog "${hook[@]}" | sed -e 's/^time=[^ ]* //' -e 's/ applied=.*//' | grep -E 'without MPS' | head -1

step "The jobs end: bob's epilog leaves alice's daemon alone; alice's quits it, checks that no MPS server is left and removes its directories" \
  "gpuprep-epilog (job 4251); gpuprep-epilog (job 4250)"
unset CUDA_VISIBLE_DEVICES CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
rmdir "$scope/job_4251"
SLURM_JOB_ID=4251 SLURM_JOB_USER=bob "$bin"/gpuprep-epilog "${hook[@]}" 2>&1 | grep -E 'epilog done' | sed -e 's/^time=[^ ]* //'
echo "alice's daemon still there: $(ls -d "$root"/run/gpuprep/mps/alice-*/pipe | sed "s|$root||")"
rmdir "$scope/job_4250"
SLURM_JOB_ID=4250 "$bin"/gpuprep-epilog "${hook[@]}" 2>&1 | grep -E 'epilog done' | sed -e 's/^time=[^ ]* //' -e 's/restored=.*\(mps@[^ ]* [^ ,"]*\).*/restored=... \1/'
echo "/run/gpuprep/mps after: $(ls -A "$root/run/gpuprep/mps" | wc -l) entries"

if [ "$node" = dgxa100 ]; then
  # Slurm's indexes of GPU 0's MIG devices: the MultipleFiles= records of
  # gres.conf; their UUIDs as the simulated GPUs give them.
  migs=$(grep '^Name=' "$root/etc/slurm/gres.conf" | grep -n 'MultipleFiles=' | cut -d: -f1 | while read -r n; do echo $((n - 1)); done | paste -sd,)
  mapfile -t miguuids < <("${gres[@]}" --format json 2>/dev/null | grep -oE '"uuid": *"MIG-[^"]*"' | sed -E 's/.*"(MIG-[^"]*)"/\1/')
  printf '[profiles.shared]\ninherits = "default"\nmps = true\n' | cat "$spool/gpuprep.toml" - >"$spool/shared.toml"
  shared=(--root "$root" --gpu-backend "$backend" --config "$spool/shared.toml" --state-dir "$spool/state")
  step "MPS on MIG devices: job 4252 (profile shared: mps = true) holds GPU 0's two MIG devices (SLURM_JOB_GPUS=$migs, gres.conf's MultipleFiles= records); the prolog starts one daemon per MIG device, each with CUDA_VISIBLE_DEVICES=<its MIG UUID> (the GPU's own settings stay untouched); a rank on the second MIG device gets that daemon; the epilog stops both" \
    "gpuprep-prolog (job 4252); srunwrap (its rank on ${miguuids[1]}); gpuprep-epilog (job 4252)"
  mkdir -p "$scope/job_4252"
  SLURM_JOB_ID=4252 SLURM_JOB_GPUS=$migs SLURM_JOB_COMMENT=gpuprep=shared SLURM_JOB_UID="$(id -u)" SLURM_JOB_GID="$(id -g)" \
    show 'MPS control daemon started|prolog done' "$bin"/gpuprep-prolog "${shared[@]}" | sed -e 's/^time=[^ ]* //' -e "s|$root||g"
  # The simulated daemons are processes of this machine: their environment.
  for p in $(pgrep -f "$root/usr/bin/nvidia-cuda-mps-control" || true); do
    tr '\0' '\n' <"/proc/$p/environ" | grep -E '^CUDA_VISIBLE_DEVICES=' | sed 's/^/MPS daemon: /'
  done | sort
  SLURM_JOB_ID=4252 SLURM_STEP_ID=0 SLURM_PROCID=0 SLURM_LOCALID=0 SLURM_NODEID=0 SLURM_NTASKS=1 SLURM_STEP_TASKS_PER_NODE=1 \
    CUDA_VISIBLE_DEVICES="${miguuids[1]}" quiet "${mps[@]}" "$bin"/srunwrap --root "$root" -- sh -c 'env | grep -E "^CUDA_(MPS_PIPE|MPS_LOG|VISIBLE)" | sort' | sed "s|$root||g"
  rmdir "$scope/job_4252"
  SLURM_JOB_ID=4252 "$bin"/gpuprep-epilog "${shared[@]}" 2>&1 | grep -E 'epilog done' | sed -e 's/^time=[^ ]* //' -e 's/restored=.*\(mps@[^ ]* [^ ,"]*\).*/restored=... \1/'
  echo "/run/gpuprep/mps after: $(ls -A "$root/run/gpuprep/mps" | wc -l) entries"
fi

step "Health before every job: the read-only table (gpuprep-prolog --health); then a user's forged Xid lines are ignored, and the driver's Xid 79 in the kernel log fails the next prolog (under slurmd: the node drains with this reason) and every prolog of a job on GPU 0 until GPU 0 is cleared; a job on GPU 1 runs" \
  "gpuprep-prolog --health; echo 'NVRM: Xid ... 79' >> /dev/kmsg; gpuprep-prolog (job 4247, GPU 0); gpuprep-prolog (job 4248, GPU 1)"
mkdir -p "$root/dev" && printf '6,0,0,-;Linux version 6.1.0\n' >"$root/dev/kmsg" # the simulated kernel log
"$bin"/gpuprep-prolog --health "${hook[@]}" 2>&1 | grep -E '^health|^CHECK|GPU 0 |^(gpu_count|driver_version|swap|xid)' | head -14
gpu0=$(cd "$root/proc/driver/nvidia/gpus" && ls | head -1) # GPU 0's bus id
# A user's forgeries first: the kernel echoing a mount option a user chose
# (kernel facility, but the Xid text is not at the start) and a line a user
# wrote to /dev/kmsg (user facility): neither counts.
printf "3,1,4000000,-;tmpfs: Unknown parameter 'NVRM: Xid (PCI:%s): 79'\n" "${gpu0%.*}" >>"$root/dev/kmsg"
printf '12,2,4100000,-;NVRM: Xid (PCI:%s): 79, pid=1, name=x, GPU has fallen off the bus.\n' "${gpu0%.*}" >>"$root/dev/kmsg"
SLURM_JOB_ID=4246 SLURM_JOB_GPUS=0 quiet "$bin"/gpuprep-prolog "${hook[@]}" --dry-run >/dev/null
echo "forged Xid lines (a mount option the kernel echoed, a user-facility record): the prolog passes"
printf '4,3,5000000,-;NVRM: Xid (PCI:%s): 79, pid=4242, name=python, GPU has fallen off the bus.\n' "${gpu0%.*}" >>"$root/dev/kmsg"
SLURM_JOB_ID=4247 SLURM_JOB_GPUS=0 "$bin"/gpuprep-prolog "${hook[@]}" 2>&1 | grep -E '^gpuprep-prolog' || true
SLURM_JOB_ID=4248 SLURM_JOB_GPUS=$other_gpu show "health checks" "$bin"/gpuprep-prolog "${hook[@]}" | sed "s/^time=[^ ]* //"
SLURM_JOB_ID=4248 "$bin"/gpuprep-epilog "${hook[@]}" 2>&1 | grep -E "^gpuprep-epilog" || true

step "Health between jobs: gpuprep-health, slurmd's HealthCheckProgram. Xid 79 stands against GPU 0 until GPU 0 is cleared, so the check keeps failing (here --no-drain, as NHC runs it; as HealthCheckProgram it drains the node, again after an admin's resume); no new Xid, and no log line, clears it. The driver asks for a GPU reset (its recovery action, read from NVML); after the reset the action is back to none, which clears GPU 0 (so do a reboot and gpuprep-health --clear)" \
  "gpuprep-health --no-drain; echo 'NVRM: GPU ...: GPU recovered after reset' >> /dev/kmsg; gpuprep-health --no-drain; nvidia-smi -r -i 0; gpuprep-health --no-drain"
uuid0=$(sed -n 's/^GPU UUID:[[:space:]]*//p' "$root/proc/driver/nvidia/gpus/$gpu0/information")
mkdir -p "$root/run/gpuprep-mock"
printf '{"recovery_action": 1}\n' >"$root/run/gpuprep-mock/$uuid0.faults.json" # the simulated driver: GPU 0 needs a reset
rc=0
"$bin"/gpuprep-health "${hook[@]}" --no-drain --node dgxh100-01 2>&1 | grep -E '^health|^xid|^no change' || rc=$?
echo "exit status: $rc"
[ "$rc" -eq 1 ] # fails while the Xid stands; anything else stops the demo
echo "what the drain reason's code says (gpuprep-health --explain XID79, anyone may run it):"
"$bin"/gpuprep-health --explain XID79 | sed 's/^/  /'
printf '4,4,6000000,-;NVRM: GPU %s: GPU recovered after reset\n' "$gpu0" >>"$root/dev/kmsg"
rc=0
"$bin"/gpuprep-health "${hook[@]}" --no-drain --node dgxh100-01 >"$spool/health.txt" 2>&1 || rc=$?
echo "after the driver's line 'GPU recovered after reset': exit status $rc (a log line clears nothing)"
[ "$rc" -eq 1 ]
rm "$root/run/gpuprep-mock/$uuid0.faults.json" # GPU 0 reset: its recovery action is back to none
case $backend in
mock:*)
  "$bin"/gpuprep-health "${hook[@]}" --no-drain --node dgxh100-01 >"$spool/health.txt" 2>&1 || { cat "$spool/health.txt" >&2; exit 1; }
  echo "after the reset (recovery action back to none): exit 0, $(grep -E '^health' "$spool/health.txt" | sed 's/.*GPUs, //')"
  ;;
*) # no simulated recovery action: an admin's clear (root) ends it
  if [ "$(id -u)" = 0 ]; then
    "$bin"/gpuprep-health "${hook[@]}" --clear 0 --reason "GPU 0 reset by hand (demo)"
  else
    echo "($backend shows no recovery action, and gpuprep-health --clear needs root: GPU 0 stays uncleared)"
  fi
  ;;
esac

step "GPU speed: gpuprep-health --probe (root, on an idle node; under Slurm it drains the node 'gpuprep: probing' while it runs) measures each GPU through the CUDA driver (here the simulated GPUs' fake one, the memory of Slurm's GPU $other_gpu made slow), saves the verdict and acts on it; a job on that GPU then fails its prolog; a probe after the repair passes" \
  "gpuprep-health --probe --no-drain; gpuprep-prolog (job 4249, GPU $other_gpu); gpuprep-health --probe --no-drain"
if [ "$(id -u)" = 0 ]; then
  # Slurm's GPU $other_gpu: its gres.conf line's device file, then the GPU of that minor.
  file=$(grep '^Name=' "$root/etc/slurm/gres.conf" | sed -n "$((other_gpu + 1))p" | sed 's/.*File=\([^ ,]*\).*/\1/')
  slow=$(grep -l "^Device Minor:[[:space:]]*${file#/dev/nvidia}\$" "$root"/proc/driver/nvidia/gpus/*/information | head -1)
  slow=$(basename "$(dirname "$slow")")
  printf '{"%s": {"copy_gbps": 200}}\n' "$slow" >"$root/run/gpuprep-mock/cuda.json"
  rc=0
  "$bin"/gpuprep-health "${hook[@]}" --probe --no-drain --node "$node-01" 2>&1 || rc=$?
  echo "exit status: $rc"
  [ "$rc" -eq 1 ] # the slow GPU fails the verdict; anything else stops the demo
  echo "what HBM_SLOW says (gpuprep-health --explain HBM_SLOW):"
  "$bin"/gpuprep-health --explain HBM_SLOW | sed 's/^/  /'
  rc=0
  SLURM_JOB_ID=4249 SLURM_JOB_GPUS=$other_gpu "$bin"/gpuprep-prolog "${hook[@]}" >"$spool/out.txt" 2>&1 || rc=$?
  echo "prolog of job 4249 on GPU $other_gpu ($slow): exit $rc: $(grep -m1 '^gpuprep-prolog:' "$spool/out.txt")"
  [ "$rc" -ne 0 ] # the slow GPU fails the prolog; a pass stops the demo
  rm "$root/run/gpuprep-mock/cuda.json" # the GPU replaced
  "$bin"/gpuprep-health "${hook[@]}" --probe --no-drain --node "$node-01" 2>&1 | grep -E '^verdict|^probe of' || { echo "the probe after the repair failed" >&2; exit 1; }
else
  echo "(gpuprep-health --probe needs root: run make demo as root to see it)"
fi

step "A MIG layout the node does not have: the prolog refuses before changing anything (under slurmd: exit 1, the node drains with this reason)" \
  "gpuprep-prolog --dry-run, [mig.layout] all = [\"$mig_whole\"]"
sed "s/^all = \[\]/all = [\"$mig_whole\"]/" "$spool/gpuprep.toml" >"$spool/mig.toml"
SLURM_JOB_ID=4245 SLURM_JOB_GPUS=$whole_gpu "$bin"/gpuprep-prolog --root "$root" --gpu-backend "$backend" --config "$spool/mig.toml" \
  --state-dir "$spool/state" --dry-run 2>&1 | grep -E '^gpuprep-prolog|^ *mig' || true

step "With [mig] reconfigure = true the prolog makes the layout on an idle GPU, reads it back, and gives the gres.conf Slurm now needs" \
  "gpuprep-prolog --dry-run; gpuprep-prolog (job 4246); gpuprep-epilog"
printf '[mig]\nreconfigure = true\n' | cat - "$spool/mig.toml" | sed '0,/^\[mig\]$/!{/^\[mig\]$/d}' >"$spool/mig-fix.toml"
mig=(--root "$root" --gpu-backend "$backend" --config "$spool/mig-fix.toml" --state-dir "$spool/state")
SLURM_JOB_ID=4246 SLURM_JOB_GPUS=$whole_gpu "$bin"/gpuprep-prolog "${mig[@]}" --dry-run 2>&1 | grep -E '^ *mig' || true
SLURM_JOB_ID=4246 SLURM_JOB_GPUS=$whole_gpu show 'MIG layout reconfigured' "$bin"/gpuprep-prolog "${mig[@]}" | sed 's/^time=[^ ]* //'
echo "gpuprep-gres now (the lines to write to gres.conf before restarting slurmd):"
"$bin"/gpuprep-gres --root "$root" --gpu-backend "$backend" | grep -E "${mig_whole//./\\.}|nvidia3 " | sed 's/^/  /'
SLURM_JOB_ID=4246 "$bin"/gpuprep-epilog "${mig[@]}" 2>&1 | sed 's/ restored=.*//'

step "Whoever is on call: the drift history" "gpuprep-epilog --report"
"$bin"/gpuprep-epilog --config "$spool/gpuprep.toml" --state-dir "$spool/state" --report

step "Whoever is on call for the fleet: the drift files of many nodes, collected with the admin's own tools, in one summary" \
  "gpuprep-epilog --report --from examples/fleet-drift"
"$bin"/gpuprep-epilog --config "$spool/gpuprep.toml" --report --from examples/fleet-drift

step "Whoever is on call: which GPUs slow their jobs down? The evidence records beside the drift (here this node's; --from takes collected nodes' directories)" \
  "gpuprep-epilog --report --from /var/lib/gpuprep"
"$bin"/gpuprep-epilog --config "$spool/gpuprep.toml" --report --from "$spool/state" | sed -n '/^Fleet:/,$p'

step "Metrics for node_exporter's textfile collector: one file per writer (examples/prometheus has the rules and the dashboard)" \
  "ls textfile/; grep ... gpuprep-*.prom"
(cd "$spool/textfile" && ls)
grep -h -v '^#' "$spool"/textfile/gpuprep-*.prom | grep -E 'build_info|last_run_success|drift_events|dead_jobs|xid_events|job_gpu_throttle_seconds_total\{.*reason="(power_cap|hw_thermal)".*gpu="[01]"|job_gpu_throttle_seconds_total\{.*gpu="[01]".*reason="(power_cap|hw_thermal)"|job_gpu_energy_joules_total\{.*gpu="[01]"|status\{.*(check="(xid|swap)"|gpu="0")' | sed -E 's/UUID="GPU-[^"]*"/UUID="GPU-..."/'

# DEMO_METRICS_OUT=DIR keeps the node's textfile metrics (every *.prom the
# programs wrote) in DIR, for the Prometheus example's tests.
if [ -n "${DEMO_METRICS_OUT:-}" ]; then
  cp "$spool"/textfile/*.prom "$DEMO_METRICS_OUT"/
fi
