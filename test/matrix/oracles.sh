#!/bin/sh
# oracles.sh RELEASE: runs gpuprep's oracle tests (gpuprep's node model,
# core numbering and node line held against hwloc's and slurmd's reading of
# every fixture root, and the generated gres.conf against slurmd's reading
# of it) with the hwloc, slurmd and libhwloc of Debian RELEASE
# (bookworm, trixie or sid) instead of this machine's: it builds or finds
# the root (test/matrix/mkroot.sh) and runs the tests with
# GPUPREP_ORACLE_ROOT=<root> (internal/oracleroot) and CI=true (a missing
# tool fails). It prints the tools' versions, then one line per package:
#
#	PASS lib/topo 3 tests 41 subtests 0 skipped 52.1s
#
# Each package's whole log is in ${TMPDIR:-/tmp}/gpuprep-matrix-RELEASE/.
# Exit status 1 when a package failed. Needs root (chroot, mount); run it
# from anywhere in the checkout.
set -eu

rel=${1:?usage: oracles.sh RELEASE (bookworm, trixie or sid)}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
root=$("$here/mkroot.sh" "$rel")
logs=${TMPDIR:-/tmp}/gpuprep-matrix-$rel
rm -rf "$logs"
mkdir -p "$logs/bin"
cd "$top"
export CGO_CFLAGS="${CGO_CFLAGS:--Wno-deprecated-declarations}"

# internal/fixturegen's test runs lstopo-no-graphics from PATH itself:
# this one runs the root's.
go build -o "$logs/bin/oraclerun" ./test/matrix/oraclerun
cat >"$logs/bin/lstopo-no-graphics" <<EOF
#!/bin/sh
# oracles.sh: the lstopo-no-graphics of $root
GPUPREP_ORACLE_ROOT='$root' exec '$logs/bin/oraclerun' lstopo-no-graphics "\$@"
EOF
chmod 0755 "$logs/bin/lstopo-no-graphics"

export GPUPREP_ORACLE_ROOT="$root" CI=true PATH="$logs/bin:$PATH"
echo "oracles.sh: $rel: GPUPREP_ORACLE_ROOT=$root"

# package and -run pattern: the tests that call an oracle.
set -- \
	internal/oracleroot . \
	internal/slurmcores . \
	internal/fixturegen '^TestHwlocReadsShapes$' \
	lib/topo '^(TestAgainstHwloc|TestAgainstSlurm|TestDistanceGroupsAgainstSlurm)$' \
	lib/gresgen '^(TestNodeLineAgainstSlurmd|TestGresConfAgainstSlurmd)$'
failed=0
while [ $# -ge 2 ]; do
	pkg=$1 run=$2
	shift 2
	log=$logs/$(echo "$pkg" | tr / _).log
	start=$(date +%s.%N)
	if go test -count=1 -timeout 20m -v "./$pkg/" -run "$run" >"$log" 2>&1; then res=PASS; else res=FAIL failed=1; fi
	secs=$(echo "$start $(date +%s.%N)" | awk '{printf "%.1f", $2 - $1}')
	if [ "$pkg" = internal/oracleroot ]; then
		sed -n 's/^ *oracleroot_test.go:[0-9]*: /oracles.sh: /p' "$log"
	fi
	tests=$(grep -c '^--- ' "$log" || true)
	subs=$(grep -c '^ \{4,\}--- ' "$log" || true)
	skips=$(grep -c -- '--- SKIP' "$log" || true)
	echo "$res $pkg $tests tests $subs subtests $skips skipped ${secs}s"
	if [ $res = FAIL ]; then
		grep -E -- '--- FAIL|_test.go:[0-9]+:|^panic|^FAIL|cannot|error' "$log" | head -n 40 | sed 's/^/    /'
		echo "    (whole log: $log)"
	fi
done
exit $failed
