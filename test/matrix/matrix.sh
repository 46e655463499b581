#!/bin/bash
# matrix.sh: `make test-matrix`. For each Debian release whose Slurm
# gpuprep supports (bookworm: Slurm 22.05, trixie: 24.11, sid: 26.05, or
# the releases in GPUPREP_MATRIX_RELEASES), runs
#   1. the topology oracles with that release's hwloc and slurmd
#      (test/matrix/oracles.sh RELEASE: lstopo, slurmd -C and slurmd's
#      registered counts against gpuprep's reading of every fixture root);
#   2. the real-node scenarios of test/vmtest in a VM booted from that
#      release (GPUPREP_VM_RELEASE: its kernel, systemd, cgroup v2 and
#      Slurm's cgroup plugin; the image is built once per release and
#      cached in /var/cache/gpuprep-vm).
# Each part's log is in build/matrix/RELEASE-{oracles,vm}.log, and the
# last lines printed are the table docs/COMPATIBILITY.md is written from.
# Exit status 1 when any part failed. Needs root, qemu and debootstrap
# (make deps); about 40 minutes per release on 2 cores under TCG.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo" || exit 1
releases=${GPUPREP_MATRIX_RELEASES:-bookworm trixie sid}
logs=$repo/build/matrix
mkdir -p "$logs"
go=${GO:-go}
export CGO_CFLAGS=${CGO_CFLAGS:--Wno-deprecated-declarations}

for rel in $releases; do
	case $rel in bookworm | trixie | sid) ;; *) echo "matrix: GPUPREP_MATRIX_RELEASES: unknown release $rel (want bookworm, trixie or sid)" >&2 && exit 2 ;; esac
done

declare -A result
fail=0
# part NAME RELEASE CMD...: runs CMD with its output in the log, keeps
# PASS/FAIL and the time taken.
part() {
	local name=$1 rel=$2
	shift 2
	local log=$logs/$rel-$name.log start=$SECONDS
	echo "matrix: $rel: $name (log: $log)" >&2
	if "$@" >"$log" 2>&1; then
		result[$rel-$name]="PASS ($((SECONDS - start)) s)"
	else
		result[$rel-$name]="FAIL ($((SECONDS - start)) s): $(grep -E -- '^(--- FAIL|FAIL|matrix:|oracles:)' "$log" | head -n 3 | tr '\n' ' ')"
		fail=1
	fi
	echo "matrix: $rel: $name: ${result[$rel-$name]}" >&2
}

for rel in $releases; do
	part oracles "$rel" bash "$here/oracles.sh" "$rel"
	part vm "$rel" env GPUPREP_VM_RELEASE="$rel" "$go" test -count=1 -v -timeout 90m ./test/vmtest/
done

echo
echo "| Release | Oracles (hwloc, slurmd -C) | VM scenarios (test/vmtest) |"
echo "|---|---|---|"
for rel in $releases; do
	echo "| $rel | ${result[$rel-oracles]} | ${result[$rel-vm]} |"
done
exit $fail
