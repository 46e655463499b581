#!/bin/sh
# mkroot.sh RELEASE: a minimal Debian root (debootstrap --variant=minbase)
# of RELEASE (bookworm, trixie, ...) from GPUPREP_PKGTEST_MIRROR, else the
# Debian mirror of this machine's apt sources (test/debmirror.sh), to
# install gpuprep's .deb into. It is built once and cached in
# $GPUPREP_PKGTEST_CACHE/RELEASE/root (default /var/cache/gpuprep-pkgtest),
# keyed by release; the path is printed on stdout. The cached root is never
# changed afterwards: tests copy it. A failed build leaves nothing cached.
# Needs root and debootstrap; about 1-3 minutes per release from scratch.
set -eu

rel=${1:?usage: mkroot.sh RELEASE}
case $rel in *[!a-z]*) echo "mkroot.sh: bad release name: $rel" >&2; exit 2 ;; esac
cache=${GPUPREP_PKGTEST_CACHE:-/var/cache/gpuprep-pkgtest}/$rel
mirror=$(sh "$(dirname "$0")/../debmirror.sh" GPUPREP_PKGTEST_MIRROR)

if [ -f "$cache/ok" ] && [ -x "$cache/root/usr/bin/dpkg" ]; then
	echo "$cache/root"
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "mkroot.sh: debootstrap needs root" >&2
	exit 1
fi
debootstrap=$(command -v debootstrap || echo /usr/sbin/debootstrap)
[ -x "$debootstrap" ] || { echo "mkroot.sh: no debootstrap (apt-get install debootstrap)" >&2; exit 1; }

tmp=$cache.tmp.$$
rm -rf "$tmp"
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
if ! timeout 900 "$debootstrap" --variant=minbase "$rel" "$tmp/root" "$mirror" >"$tmp/debootstrap.log" 2>&1; then
	echo "mkroot.sh: debootstrap $rel failed; the end of its log:" >&2
	tail -n 20 "$tmp/debootstrap.log" >&2
	exit 1
fi
# Smaller and quicker to copy: no downloaded .debs or package lists.
rm -rf "$tmp/root/var/cache/apt/archives/"*.deb "$tmp/root/var/lib/apt/lists/"* 2>/dev/null || true
touch "$tmp/ok"
rm -rf "$cache"
mv "$tmp" "$cache"
trap - EXIT
echo "$cache/root"
