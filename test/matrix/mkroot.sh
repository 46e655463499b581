#!/bin/sh
# mkroot.sh RELEASE: a Debian root of RELEASE (bookworm, trixie or sid) that
# holds the tools gpuprep's oracles run (slurmd, lstopo-no-graphics, and cc
# with libhwloc-dev for internal/slurmcores), for GPUPREP_ORACLE_ROOT
# (internal/oracleroot). debootstrap --variant=minbase from
# GPUPREP_MATRIX_MIRROR, else the Debian mirror of this machine's apt
# sources (test/debmirror.sh), then, in a chroot, apt-get install
# --no-install-recommends of $pkgs. It is built once and cached in
# ${GPUPREP_MATRIX_CACHE:-/var/cache/gpuprep-matrix}/RELEASE/root; the path
# is printed on stdout. A failed build leaves nothing cached; a build takes
# at most 25 minutes (debootstrap 15, apt-get 10), 2-5 minutes on a good
# link. Delete the RELEASE folder to rebuild. Needs root and debootstrap.
set -eu

rel=${1:?usage: mkroot.sh RELEASE (bookworm, trixie or sid)}
case $rel in bookworm | trixie | sid) ;; *) echo "mkroot.sh: release $rel: want bookworm, trixie or sid" >&2 && exit 2 ;; esac
cache=${GPUPREP_MATRIX_CACHE:-/var/cache/gpuprep-matrix}/$rel
mirror=$(sh "$(dirname "$0")/../debmirror.sh" GPUPREP_MATRIX_MIRROR)
# hwloc-nox: lstopo-no-graphics without X; libhwloc-plugins: what slurmd's
# libhwloc recommends, installed with Debian's slurmd on a real node.
pkgs="slurmd hwloc-nox libhwloc-dev libhwloc-plugins gcc libc6-dev"

if [ -f "$cache/ok" ] && [ -x "$cache/root/usr/sbin/slurmd" ]; then
	echo "$cache/root"
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "mkroot.sh: debootstrap and chroot need root" >&2
	exit 1
fi
debootstrap=$(command -v debootstrap || echo /usr/sbin/debootstrap)
[ -x "$debootstrap" ] || { echo "mkroot.sh: no debootstrap (apt-get install debootstrap)" >&2; exit 1; }

tmp=$cache.tmp.$$
root=$tmp/root
log=$tmp/build.log
# debootstrap mounts /proc (and may leave it, and /sys, mounted when it
# fails); apt-get runs without them. Unmount before removing or publishing.
unmount_all() {
	for m in dev/pts proc sys; do
		! mountpoint -q "$root/$m" 2>/dev/null || umount -l "$root/$m" || true
	done
}
cleanup() {
	rc=$?
	unmount_all
	if [ $rc -ne 0 ]; then
		echo "mkroot.sh: building $rel failed (exit $rc); the end of its log:" >&2
		tail -n 25 "$log" >&2 2>/dev/null || true
	fi
	rm -rf --one-file-system "$tmp"
}
rm -rf --one-file-system "$tmp"
mkdir -p "$tmp"
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

echo "mkroot.sh: debootstrap $rel into $root (log $log)" >&2
timeout 900 "$debootstrap" --variant=minbase "$rel" "$root" "$mirror" >"$log" 2>&1

echo "deb $mirror $rel main" >"$root/etc/apt/sources.list"
rm -f "$root/etc/apt/sources.list.d/"*
# sid: this mirror's Release file can be past its Valid-Until ("is
# expired"); accept it, as test/vm/build-image.sh does. Harmless elsewhere.
echo 'Acquire::Check-Valid-Until "false";' >"$root/etc/apt/apt.conf.d/99gpuprep-matrix"
# No daemon (munge, slurmd) starts from a postinst.
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 0755 "$root/usr/sbin/policy-rc.d"
in_root() {
	timeout 600 chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 "$@" >>"$log" 2>&1
}
echo "mkroot.sh: apt-get install $pkgs" >&2
in_root apt-get -o Acquire::Check-Valid-Until=false update
in_root apt-get -o Acquire::Check-Valid-Until=false install -y --no-install-recommends $pkgs
rm -f "$root/usr/sbin/policy-rc.d"
# The mount points internal/oracleroot binds the fixture root and the
# command's working directory on (in a private mount namespace).
mkdir -p "$root/gpuprep-fsroot" "$root/gpuprep-work"
# Smaller: no downloaded .debs or package lists.
rm -rf "$root/var/cache/apt/archives/"*.deb "$root/var/lib/apt/lists/"* 2>/dev/null || true
for t in usr/sbin/slurmd usr/bin/lstopo-no-graphics usr/bin/cc usr/include/hwloc.h; do
	[ -e "$root/$t" ] || [ -L "$root/$t" ] || { echo "mkroot.sh: $rel root has no /$t" >>"$log"; exit 1; }
done
chroot "$root" dpkg-query -W -f='${Package} ${Version}\n' slurmd hwloc-nox libhwloc-dev gcc >"$tmp/versions"
unmount_all
touch "$tmp/ok"
rm -rf --one-file-system "$cache"
mv "$tmp" "$cache"
trap - EXIT
sed 's/^/mkroot.sh: /' "$cache/versions" >&2
echo "$cache/root"
