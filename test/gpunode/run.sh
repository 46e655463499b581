#!/bin/bash
# Checks gpuprep on a real GPU node, read-only, and times it: what issue 11
# asks of an 8-GPU node, for any number of GPUs. Needs the NVIDIA driver,
# nvidia-smi and python3 (PyTorch with NCCL for the all_reduce part); no Go,
# no Slurm. It changes nothing: the hooks run with --dry-run or --health,
# srunwrap binds only the benchmark's own ranks.
#
#   make gpunode-kit      # on a machine with Go: bin/gpunode/ and bin/gpunode-kit.tgz
#   tar xzf gpunode-kit.tgz && sudo gpunode/run.sh OUTDIR   # on the GPU node
#
# Steps, each writing into OUTDIR:
#   1. references: nvidia-smi topo -m and -q -x, and a read-only capture of
#      the node as a fixture root by capture-root.sh (CAPTURE=path to it; the
#      kit's copy by default when it has one; CAPTURE=none skips it);
#   2. gpuprep-gres with real NVML, checked against topo -m by topocheck
#      (every GPU line, Links=, CPU and NUMA affinity), and timed against it;
#   3. gpuprep-prolog --dry-run (a job on every GPU) and --health, and
#      gpuprep-health (slurmd's HealthCheckProgram; --dry-run, then timed with
#      --no-drain: no scontrol), timed against nvmlprobe (NVML init plus the
#      per-GPU reads each needs);
#   4. srunwrap --explain for one rank per GPU (and two per GPU), checked
#      against topo -m by topocheck (GPU, CPUs, memory node, nearest HCA);
#   5. an all_reduce of every GPU (8 B to 1 GiB) launched through srunwrap
#      and without it: at least 98% of the bus bandwidth (allreduce.py).
# OUTDIR/summary.txt has one PASS/FAIL line per check. RUNS=40 sets the
# timing runs; SKIP="allreduce timing" leaves steps out.
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
BIN=${BIN:-$here/bin}
CAPTURE=${CAPTURE:-$here/capture-root.sh}
out=${1:?usage: run.sh OUTDIR}
RUNS=${RUNS:-40}
SKIP=${SKIP:-}
mkdir -p "$out"
summary=$out/summary.txt
: > "$summary"
export NCCL_NVLS_ENABLE=0
skip() { case " $SKIP " in *" $1 "*) return 0;; esac; return 1; }
verdict() { # verdict NAME EXIT: a PASS/FAIL line in the summary
	if [ "$2" = 0 ]; then echo "PASS $1" >> "$summary"; else echo "FAIL $1 (exit $2)" >> "$summary"; fi
}
for b in gpuprep-gres gpuprep-prolog gpuprep-health srunwrap nvmlprobe topocheck; do
	[ -x "$BIN/$b" ] || { echo "run.sh: $BIN/$b is missing (make gpunode-kit builds them)" >&2; exit 2; }
done
command -v nvidia-smi >/dev/null || { echo "run.sh: nvidia-smi not found" >&2; exit 2; }

ngpu=$(ls /proc/driver/nvidia/gpus | wc -l)
all=$(seq -s, 0 $((ngpu - 1)))
buses=$(ls /proc/driver/nvidia/gpus | sort)
state=$(mktemp -d /tmp/gpuprep-gpunode.XXXXXX)
trap 'rm -rf "$state"' EXIT

echo "== 1. the node and its references"
{
	date -u +%FT%TZ
	uname -r
	nvidia-smi --query-gpu=index,pci.bus_id,name,driver_version,persistence_mode,mig.mode.current --format=csv,noheader
	echo "CPUs: $(nproc) online; NUMA nodes: $(ls -d /sys/devices/system/node/node[0-9]* | wc -l)"
	grep -m1 "model name" /proc/cpuinfo
	"$BIN/gpuprep-gres" --version
} | tee "$out/info.txt"
nvidia-smi topo -m > "$out/topo-m.txt"
nvidia-smi -q -x > "$out/nvidia-smi-q.xml"
if [ "$CAPTURE" != none ] && [ -f "$CAPTURE" ]; then
	OUT=$out/capture bash "$CAPTURE" > "$out/capture.log" 2>&1
	verdict "capture of the node ($out/capture/root.tgz)" $?
fi

echo "== 2. gpuprep-gres (NVML) against nvidia-smi topo -m"
"$BIN/gpuprep-gres" --gpu-backend nvml > "$out/gres-nvml.conf"
"$BIN/gpuprep-gres" --gpu-backend nvml --format json > "$out/gres-nvml.json"
"$BIN/gpuprep-gres" --gpu-backend nvml --format table > "$out/gres-table.txt"
cat "$out/gres-nvml.conf"
"$BIN/topocheck" gres --topo "$out/topo-m.txt" --gres "$out/gres-nvml.json" | tee "$out/topocheck-gres.txt"
verdict "gpuprep-gres agrees with nvidia-smi topo -m" $?
if ! skip timing; then
	python3 "$here/times.py" "$RUNS" \
		gres "$BIN/gpuprep-gres" --gpu-backend nvml ::: \
		"gres --format table" "$BIN/gpuprep-gres" --gpu-backend nvml --format table ::: \
		"nvidia-smi topo -m" nvidia-smi topo -m ::: \
		/bin/true /bin/true \
		--ratio "gres/nvidia-smi topo -m" | tee "$out/time-gres.txt"
fi

echo "== 3. gpuprep-prolog --dry-run and --health against the NVML floor"
"$BIN/gpuprep-prolog" --health --state-dir "$state/spool" > "$out/health.txt" 2>&1
echo "health exit $? (1: a fatal check failed on this node)" >> "$out/health.txt"
cat "$out/health.txt"
# gpuprep-health as slurmd would run it, read-only: no Slurm here, so the
# node's state is unknown and it only says what it would do.
"$BIN/gpuprep-health" --dry-run --state-dir "$state/hspool" > "$out/gpuprep-health.txt" 2>&1
echo "gpuprep-health exit $? (1: a fatal check failed on this node)" >> "$out/gpuprep-health.txt"
tail -3 "$out/gpuprep-health.txt"
if ! skip timing; then
	# The hooks find SLURM_JOB_GPUS in the gres.conf beside SLURM_CONF: the
	# one gpuprep-gres wrote above.
	cp "$out/gres-nvml.conf" "$state/gres.conf"
	: > "$state/slurm.conf"
	export SLURM_CONF=$state/slurm.conf SLURM_JOB_ID=1 SLURM_JOB_USER=bench SLURM_JOB_GPUS=$all
	# The prolog runs the health checks too ([health] prolog = true by
	# default), so nvmlprobe --health on the job's GPUs is the floor of both
	# runs; plain nvmlprobe is the profile's reads alone.
	# shellcheck disable=SC2086 # $buses is one bus id per word
	python3 "$here/times.py" "$RUNS" \
		"prolog --dry-run (job on all $ngpu GPUs)" "$BIN/gpuprep-prolog" --dry-run --state-dir "$state/spool" ::: \
		"prolog --health (every GPU)" "$BIN/gpuprep-prolog" --health --state-dir "$state/spool" ::: \
		"gpuprep-health --no-drain (every GPU)" "$BIN/gpuprep-health" --no-drain --state-dir "$state/hspool" ::: \
		"nvmlprobe --health (the floor)" "$BIN/nvmlprobe" --health $buses ::: \
		"nvmlprobe (the profile's reads only)" "$BIN/nvmlprobe" $buses ::: \
		/bin/true /bin/true \
		--ratio "prolog --dry-run (job on all $ngpu GPUs)/nvmlprobe --health (the floor)" \
		"prolog --health (every GPU)/nvmlprobe --health (the floor)" \
		"gpuprep-health --no-drain (every GPU)/nvmlprobe --health (the floor)" | tee "$out/time-prolog.txt"
	unset SLURM_CONF SLURM_JOB_ID SLURM_JOB_USER SLURM_JOB_GPUS
fi

echo "== 4. srunwrap --explain for every rank"
for per in 1 2; do
	n=$((ngpu * per))
	"$BIN/srunwrap" --explain --tasks "$n" > "$out/explain-$n.txt"
	"$BIN/srunwrap" --explain --tasks "$n" --json > "$out/explain-$n.json"
	"$BIN/topocheck" ranks --topo "$out/topo-m.txt" --explain "$out/explain-$n.json" --gres "$out/gres-nvml.json" |
		tee "$out/topocheck-ranks-$n.txt"
	verdict "srunwrap --explain right for $n ranks on $ngpu GPUs" $?
done
cat "$out/explain-$ngpu.txt"
if ! skip timing; then
	export SLURM_JOB_ID=7 SLURM_STEP_ID=0 SLURM_NODEID=0 SLURM_PROCID=0 SLURM_LOCALID=0 SLURM_NTASKS=$ngpu \
		SLURM_STEP_TASKS_PER_NODE=$ngpu SLURM_STEP_GPUS=$all CUDA_VISIBLE_DEVICES=$all
	python3 "$here/times.py" "$RUNS" \
		"srunwrap -- /bin/true (rank 0 of $ngpu, sysfs)" "$BIN/srunwrap" -q -- /bin/true ::: \
		/bin/true /bin/true | tee "$out/time-srunwrap.txt"
	unset SLURM_JOB_ID SLURM_STEP_ID SLURM_NODEID SLURM_PROCID SLURM_LOCALID SLURM_NTASKS \
		SLURM_STEP_TASKS_PER_NODE SLURM_STEP_GPUS CUDA_VISIBLE_DEVICES
fi

if ! skip allreduce; then
	echo "== 5. all_reduce through srunwrap against without it"
	if [ "$ngpu" -lt 2 ]; then
		echo "SKIP all_reduce: needs two GPUs or more (one rank's all_reduce moves nothing)" | tee -a "$summary"
	elif python3 -c 'import torch.distributed' 2>/dev/null; then
		python3 "$here/allreduce.py" --srunwrap "$BIN/srunwrap" --rounds "${ROUNDS:-3}" \
			--json "$out/allreduce.json" | tee "$out/allreduce.txt"
		verdict "all_reduce through srunwrap at >= 98% of the bus bandwidth ($ngpu ranks)" $?
	else
		echo "FAIL all_reduce: python3 cannot import torch.distributed" >> "$summary"
	fi
fi

echo "== summary ($out/summary.txt)"
cat "$summary"
! grep -q ^FAIL "$summary"
