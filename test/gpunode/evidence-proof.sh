#!/bin/bash
# Per-job evidence on a real GPU node (issue 34): a job's prolog, 20
# seconds of GPU load (probe_torch.py --load: FP32 matmul and copies), its
# epilog; then an idle job of the same length. Each job's record
# (gpuprep-epilog --report --job) is checked against nvidia-smi's
# power.draw.instant sampled every 100 ms over the same window
# (evidence_power.py): the energies must agree within 5%. nvmlprobe
# --counters times the counters' read per GPU, and the hooks are timed
# with [evidence] on and off. It changes no setting: the profile sets no
# knob, so the hooks only read.
#
#   sudo gpunode/evidence-proof.sh OUTDIR     # GPU=0 picks the GPU (Slurm index)
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
BIN=${BIN:-$here/bin}
GPU=${GPU:-0}
SECONDS_LOAD=${SECONDS_LOAD:-20}
out=${1:?usage: evidence-proof.sh OUTDIR}
mkdir -p "$out"
summary=$out/summary.txt
: >"$summary"
verdict() { if [ "$2" = 0 ]; then echo "PASS $1" >>"$summary"; else echo "FAIL $1" >>"$summary"; fi; }
state=$(mktemp -d /tmp/gpuprep-evidence.XXXXXX)
trap 'rm -rf "$state"; kill $smi 2>/dev/null' EXIT

"$BIN/nvmlprobe" --counters --reads 50 >"$out/counters.txt" 2>&1
verdict "nvmlprobe --counters" $?

"$BIN/gpuprep-gres" --gpu-backend nvml >"$state/gres.conf"
: >"$state/slurm.conf"
conf() { # $1: evidence on or off
	cat <<TOML
[general]
log_file = ""
metrics_dir = ""
[selection]
default_profile = "watch"
[profiles.watch]
[evidence]
enabled = $1
TOML
}
conf true >"$state/on.toml"
conf false >"$state/off.toml"
export SLURM_CONF=$state/slurm.conf SLURM_JOB_USER=root SLURM_JOB_UID=0 SLURM_JOB_GID=0 \
	SLURM_JOB_GPUS=$GPU SLURMD_NODENAME=$(hostname -s)
hook=(--gpu-backend nvml --state-dir "$state/spool")
uuid=$(nvidia-smi -i "$GPU" --query-gpu=uuid --format=csv,noheader)

# job ID LOADCMD...: prolog, LOADCMD while nvidia-smi samples the GPU's
# power, epilog; then the record as JSON and as the user's table.
job() {
	local id=$1
	shift
	nvidia-smi -i "$GPU" --query-gpu=timestamp,power.draw.instant --format=csv,noheader,nounits -lms 100 >"$out/power-$id.csv" &
	smi=$!
	sleep 1
	SLURM_JOB_ID=$id "$BIN/gpuprep-prolog" "${hook[@]}" --config "$state/on.toml" >"$out/prolog-$id.txt" 2>&1
	verdict "job $id: prolog" $?
	CUDA_VISIBLE_DEVICES=$uuid "$@" >"$out/load-$id.txt" 2>&1
	SLURM_JOB_ID=$id "$BIN/gpuprep-epilog" "${hook[@]}" --config "$state/on.toml" >"$out/epilog-$id.txt" 2>&1
	verdict "job $id: epilog" $?
	sleep 1
	kill $smi
	wait $smi 2>/dev/null
	"$BIN/gpuprep-epilog" "${hook[@]}" --config "$state/on.toml" --report --job "$id" --json >"$out/record-$id.json"
	verdict "job $id: --report --job --json" $?
	"$BIN/gpuprep-epilog" "${hook[@]}" --config "$state/on.toml" --report --job "$id" >"$out/report-$id.txt"
	python3 "$here/evidence_power.py" "$out/record-$id.json" "$out/power-$id.csv" >"$out/check-$id.json"
	python3 - "$out/check-$id.json" "$id" >>"$summary" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
r = c.get("ratio")
ok = r is not None and abs(r - 1) <= 0.05
print(("PASS" if ok else "FAIL") + " job %s: record %.0f J (%.1f W) vs nvidia-smi %.0f J (%.1f W) over %.1f s: ratio %s" % (
    sys.argv[2], c.get("record_energy_j") or 0, c.get("record_mean_power_w") or 0,
    c.get("smi_energy_j") or 0, c.get("smi_mean_power_w") or 0, c["window_s"], r))
PY
}
job 3401 python3 "$here/probe_torch.py" --load "$SECONDS_LOAD"
job 3402 sleep "$SECONDS_LOAD"

# The hooks' cost: 10 prolog+epilog pairs with [evidence] on, 10 off.
for mode in on off; do
	for i in $(seq 10); do
		id=$((3500 + i))
		s=$(date +%s%N)
		SLURM_JOB_ID=$id "$BIN/gpuprep-prolog" "${hook[@]}" --config "$state/$mode.toml" >/dev/null 2>&1
		m=$(date +%s%N)
		SLURM_JOB_ID=$id "$BIN/gpuprep-epilog" "${hook[@]}" --config "$state/$mode.toml" >/dev/null 2>&1
		e=$(date +%s%N)
		echo "$mode prolog_ms $(( (m - s) / 1000 )) epilog_ms $(( (e - m) / 1000 ))" >>"$out/hook-times.txt"
	done
done
sed -i 's/_ms \([0-9]*\)/_us \1/g' "$out/hook-times.txt"
python3 - "$out/hook-times.txt" >>"$summary" <<'PY'
import statistics, sys
t = {"on": {"prolog": [], "epilog": []}, "off": {"prolog": [], "epilog": []}}
for line in open(sys.argv[1]):
    f = line.split()
    t[f[0]]["prolog"].append(int(f[2]) / 1000)
    t[f[0]]["epilog"].append(int(f[4]) / 1000)
for h in ("prolog", "epilog"):
    on, off = statistics.median(t["on"][h]), statistics.median(t["off"][h])
    print("INFO %s median %.1f ms with [evidence], %.1f ms without: +%.1f ms" % (h, on, off, on - off))
PY
cat "$summary"
