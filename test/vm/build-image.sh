#!/bin/bash
# build-image.sh: builds the gpuprep test node VM image, or finds it cached.
#
# The image is a Debian 12 (bookworm) root filesystem with systemd as PID 1,
# cgroup v2, munge and Debian's Slurm 22.05 (slurmctld and slurmd on the node
# itself, set up as a modern GPU node: see files/rootfs/etc/slurm), OpenSSH,
# hwloc, python3, irqbalance (masked: a scenario starts it) and a user alice
# (uid 1000). It boots under qemu (TCG) with two sockets and two NUMA nodes:
# see vm.sh.
#
# Usage (as root on a Debian 12 machine): test/vm/build-image.sh
# Prints progress on stderr and, as its last stdout line, the image folder:
#   $GPUPREP_VM_CACHE/<key>/{rootfs.img,vmlinuz,initrd.img,cmdline,id_ed25519,image.env}
#
# <key> is a hash of this script, every file under files/ (copied into the
# image) and the Debian mirror: with the same inputs a second run does
# nothing (well under a second); a changed input builds a new image and removes
# the older ones. The build runs in a temporary folder of the cache and is
# renamed into place at the end, so a killed build never leaves an image that
# looks finished. Each boot must use a throwaway qcow2 overlay over rootfs.img
# (vm.sh does): the cached image is never written to.
#
# Environment:
#   GPUPREP_VM_CACHE   cache folder (default /var/cache/gpuprep-vm)
#   GPUPREP_VM_MIRROR  Debian mirror (default: the one in this machine's
#                      apt sources, test/debmirror.sh)
#   GPUPREP_VM_RELEASE the Debian release: bookworm (default: Slurm 22.05), #release
#                      trixie (Slurm 24.11) or sid (Slurm 26.05). Each has its #release
#                      own key and image; building one never removes another #release
#                      release's image. #release
# #release
# Lines ending in "#release" are left out of bookworm's key: they are the #release
# per-release switches, none of which changes what a bookworm image holds, so #release
# the bookworm image keeps the key it had before releases were added. Keep it #release
# so: a line that changes the bookworm build must not carry the mark. #release
#
# Installs what it needs on the host with apt-get when missing: qemu-system-x86,
# qemu-utils, debootstrap, openssh-client, e2fsprogs. Downloaded packages are
# kept in $GPUPREP_VM_CACHE/debs for the next build.
set -euo pipefail
umask 022

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
files=$here/files/rootfs
initramfs_init=$here/files/initramfs/init
# Modules the VM's own initramfs loads (with their dependencies).
initrd_modules=(virtio_pci virtio_blk virtio_net crc32c_generic ext4)
cache=${GPUPREP_VM_CACHE:-/var/cache/gpuprep-vm}
suite=bookworm
suite=${GPUPREP_VM_RELEASE:-bookworm} #release
case $suite in bookworm | trixie | sid) ;; *) echo "build-image: GPUPREP_VM_RELEASE=$suite: want bookworm, trixie or sid" >&2 && exit 2 ;; esac #release
image_size=4G
# Packages installed into the image (beyond debootstrap's minbase).
packages=(
	systemd systemd-sysv dbus libpam-systemd
	linux-image-amd64 initramfs-tools kmod e2fsprogs
	openssh-server iproute2 procps util-linux less jq
	munge slurmd slurmctld slurm-client
	hwloc python3 busybox-static
	irqbalance
)
# sid: initramfs-tools no longer pulls in cpio, which makes the VM's initramfs below. #release
[ "$suite" != sid ] || packages+=(cpio) #release
kernel_cmdline="console=ttyS0,115200 root=/dev/vda rw systemd.unified_cgroup_hierarchy=1 systemd.firstboot=off panic=-1 mitigations=off tsc=reliable net.ifnames=0"

say() { echo "build-image: $*" >&2; }
die() {
	say "$*"
	exit 1
}

# mirror: GPUPREP_VM_MIRROR, else the first Debian (non-security) archive of
# this machine's apt sources (test/debmirror.sh).
mirror=$(sh "$(dirname "$0")/../debmirror.sh" GPUPREP_VM_MIRROR)
security=${mirror%/debian}/debian-security

# The key: this script, each file under files/ (path and content) and the mirror.
image_key() { #release
key=$(
	{
		sha256sum <"$here/build-image.sh"
		(cd "$here/files" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
		echo "$mirror $suite"
	} | sha256sum | cut -c1-16
)
} #release
# bookworm: the script without its "#release" lines (see the top); the #release
# others: all of it (and their suite differs anyway). #release
if [ "$suite" = bookworm ]; then #release
	keydir=$(mktemp -d) #release
	grep -v '#release$' "$here/build-image.sh" >"$keydir/build-image.sh" #release
	ln -s "$here/files" "$keydir/files" #release
	here=$keydir image_key #release
	rm -rf "$keydir" #release
else image_key; fi #release
final=$cache/$key

# Tools the host needs to boot the image (and, to build it, more).
need_tools() {
	local missing=() t
	for t in "$@"; do
		command -v "$t" >/dev/null 2>&1 || [ -x "/usr/sbin/$t" ] || [ -x "/sbin/$t" ] || missing+=("$t")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	[ "$(id -u)" = 0 ] || die "missing ${missing[*]}: run as root to install them"
	command -v apt-get >/dev/null || die "missing ${missing[*]} and no apt-get"
	say "installing on this machine: qemu-system-x86 qemu-utils debootstrap openssh-client e2fsprogs (missing: ${missing[*]})"
	DEBIAN_FRONTEND=noninteractive timeout 300 apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq --no-install-recommends \
		-o DPkg::Lock::Timeout=120 qemu-system-x86 qemu-utils debootstrap openssh-client e2fsprogs >&2
}

done_already() {
	if [ -f "$final/image.env" ]; then
		need_tools qemu-system-x86_64 qemu-img ssh
		say "cached: $final"
		echo "$final"
		exit 0
	fi
}
done_already

[ "$(id -u)" = 0 ] || die "not cached ($final) and not root: run as root to build the image"
need_tools qemu-system-x86_64 qemu-img ssh ssh-keygen debootstrap mkfs.ext4
mkdir -p "$cache"
chmod 0755 "$cache"
# One build at a time; a second caller waits and then finds the image.
exec 9>"$cache/.lock"
flock 9
done_already

start=$(date +%s)
# Leftovers of killed builds (we hold the lock: nobody else builds).
for old in "$cache"/.build.*; do
	[ -e "$old" ] || continue
	grep -o " $old/[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m" || true; done
	rm -rf --one-file-system "$old"
done

tmp=$(mktemp -d "$cache/.build.XXXXXX")
root=$tmp/root
out=$tmp/image
log=$tmp/build.log
mkdir -p "$root" "$out" "$cache/debs/archives"

unmount_all() {
	local m
	for m in var/cache/apt/archives dev/pts dev sys proc; do
		if mountpoint -q "$root/$m" 2>/dev/null; then umount "$root/$m" || umount -l "$root/$m"; fi
	done
}
cleanup() {
	local rc=$?
	unmount_all
	if [ $rc -ne 0 ]; then
		say "FAILED (exit $rc); last lines of the build log:"
		tail -n 30 "$log" >&2 || true
		cp "$log" "$cache/last-failed-build.log" 2>/dev/null && say "whole log: $cache/last-failed-build.log"
	fi
	rm -rf --one-file-system "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

run() { "$@" >>"$log" 2>&1; }
in_root() { run chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 "$@"; }

say "building $final from $mirror $suite (log: $log)"
say "debootstrap (minbase)"
run debootstrap --variant=minbase --cache-dir="$cache/debs" --include=systemd,systemd-sysv,dbus \
	"$suite" "$root" "$mirror"

mount -t proc proc "$root/proc"
mount -t sysfs sysfs "$root/sys"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
mount --bind "$cache/debs/archives" "$root/var/cache/apt/archives"
printf '#!/bin/sh\n# build-image.sh: no daemon starts while the image is built\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 0755 "$root/usr/sbin/policy-rc.d"
cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror $suite main
deb $mirror $suite-updates main
deb $security $suite-security main
EOF
# sid: no sid-updates or sid-security suite exists (apt-get update fails on them). #release
[ "$suite" != sid ] || echo "deb $mirror $suite main" >"$root/etc/apt/sources.list" #release
# Our files first: initramfs-tools' config must be there when the kernel
# package builds the initrd. Modes are normalised (a checkout's umask must
# not make slurm.conf group-writable).
(cd "$files" && find . -type f) | while read -r f; do
	mode=0644
	[ -x "$files/$f" ] && mode=0755
	install -D -m "$mode" -o root -g root "$files/$f" "$root/$f"
done

say "apt-get install ${packages[*]}"
# sid: a mirror that serves a frozen copy of sid has a Release file past its #release
# Valid-Until ("is expired"; seen 2026-12 on this project's mirror): accept it. #release
[ "$suite" != sid ] || echo 'Acquire::Check-Valid-Until "false";' >"$root/etc/apt/apt.conf.d/99gpuprep-vm-sid" #release
in_root apt-get update
in_root apt-get install -y --no-install-recommends "${packages[@]}"

say "configuring"
# The image's SSH key: root (and alice) log in with it.
ssh-keygen -q -t ed25519 -N "" -C "gpuprep-vm-$key" -f "$out/id_ed25519"
chmod 0600 "$out/id_ed25519"
install -d -m 0700 "$root/root/.ssh"
install -m 0600 "$out/id_ed25519.pub" "$root/root/.ssh/authorized_keys"
in_root useradd --create-home --uid 1000 --user-group --shell /bin/bash alice
install -d -m 0700 -o 1000 -g 1000 "$root/home/alice/.ssh"
install -m 0600 -o 1000 -g 1000 "$out/id_ed25519.pub" "$root/home/alice/.ssh/authorized_keys"

# munge: Debian's postinst makes a key when there is none; make sure.
if [ ! -s "$root/etc/munge/munge.key" ]; then in_root mungekey --create --keyfile=/etc/munge/munge.key; fi
in_root chown munge:munge /etc/munge/munge.key
in_root chmod 0400 /etc/munge/munge.key
install -d -m 0755 -o root -g root "$root/var/log/slurm"
in_root chown slurm:slurm /var/log/slurm
install -d -m 0755 "$root/var/lib/slurm/slurmd" "$root/var/lib/slurm/slurmctld"
in_root chown slurm:slurm /var/lib/slurm/slurmctld

in_root systemctl enable gpuprep-vm-net ssh munge slurmctld slurmd
# irqbalance runs only where a scenario starts it (irq_test.go, as a transient
# unit): started at boot it would move every IRQ under the other scenarios.
in_root systemctl disable irqbalance.service
in_root systemctl mask irqbalance.service
# The network is set by gpuprep-vm-net (files/rootfs/etc/systemd/system).
in_root systemctl mask systemd-networkd.service systemd-networkd.socket
# Nothing at boot that the tests do not need, nothing that waits for input:
# under TCG every unit costs seconds. The modules of the modprobe@ units load
# on demand; user@.service (a systemd --user per login, several seconds of
# emulated CPU before logind lets an SSH login in) is masked: logins still get
# their session scope under user.slice/user-UID.slice.
in_root systemctl mask systemd-firstboot.service getty@tty1.service \
	e2scrub_all.timer e2scrub_reap.service fstrim.timer apt-daily.timer apt-daily-upgrade.timer \
	man-db.timer dpkg-db-backup.timer systemd-networkd-wait-online.service \
	modprobe@drm.service modprobe@fuse.service modprobe@loop.service modprobe@dm_mod.service \
	modprobe@efi_pstore.service user@.service
in_root systemctl set-default multi-user.target

# machine-id is made at each boot (a throwaway overlay: every boot is a first boot).
: >"$root/etc/machine-id"
rm -f "$root/var/lib/dbus/machine-id"
rm -f "$root/usr/sbin/policy-rc.d"

kver=$(cd "$root/boot" && ls vmlinuz-* | sed 's/^vmlinuz-//' | sort -V | tail -n1)
[ -n "$kver" ] && [ -f "$root/boot/initrd.img-$kver" ] || die "no kernel or initrd in the image"
slurm_version=$(chroot "$root" dpkg-query -W -f='${Version}' slurmd)
systemd_version=$(chroot "$root" dpkg-query -W -f='${Version}' systemd)

# The VM's initramfs: files/initramfs/init, busybox and the modules to mount
# /dev/vda, uncompressed (nothing to inflate under TCG).
ird=$root/tmp/gpuprep-initrd
mkdir -p "$ird/bin" "$ird/dev" "$ird/proc" "$ird/sys" "$ird/root"
install -m 0755 "$root/bin/busybox" "$ird/bin/busybox"
install -m 0755 "$initramfs_init" "$ird/init"
mknod -m 0600 "$ird/dev/console" c 5 1
# trixie, sid: a module of the list may be built into the kernel or gone (as #release
# crc32c_generic in newer kernels): keep those modinfo knows as modules. #release
if [ "$suite" != bookworm ]; then #release
	mapfile -t initrd_modules < <(for m in "${initrd_modules[@]}"; do chroot "$root" modinfo -k "$kver" -F filename "$m" 2>/dev/null | grep -q '\.ko' && echo "$m"; done) #release
fi #release
chroot "$root" modprobe -S "$kver" --show-depends -a "${initrd_modules[@]}" |
	awk '$1 == "insmod" && !seen[$2]++ { print $2 }' >"$ird/modules"
[ -s "$ird/modules" ] || die "modprobe --show-depends listed no module"
while read -r m; do install -D -m 0644 "$root$m" "$ird$m"; done <"$ird/modules"
# trixie, sid: the kernel's modules are compressed (.ko.xz, .ko.zst) and #release
# busybox's insmod wants plain ones: unpack them inside the initramfs. #release
if grep -q '\.ko\.' "$ird/modules"; then #release
	while read -r m; do case $m in *.ko.xz) xz -d "$ird$m" ;; *.ko.zst) zstd -q -d --rm "$ird$m" ;; esac; done <"$ird/modules" #release
	sed -i 's/\.ko\.\(xz\|zst\)$/.ko/' "$ird/modules" #release
fi #release
chroot "$root" sh -c 'cd /tmp/gpuprep-initrd && find . | LC_ALL=C sort | cpio -o -H newc --quiet' >"$out/initrd.img"
rm -rf "$ird"

unmount_all
rm -rf "$root/var/lib/apt/lists/"* "$root/var/cache/apt/"*.bin "$root/var/log/"*.log "$root/var/log/apt"/*
cp "$root/boot/vmlinuz-$kver" "$out/vmlinuz"

say "mkfs.ext4 ($image_size, sparse)"
truncate -s "$image_size" "$out/rootfs.img"
# assume_storage_prezeroed: a fresh sparse file reads as zeros, so the kernel
# needs no lazy inode-table init (background writes under TCG at every boot).
run mkfs.ext4 -q -F -L gpuprep-root -E assume_storage_prezeroed=1 -d "$root" "$out/rootfs.img"

echo "$kernel_cmdline" >"$out/cmdline"
secs=$(($(date +%s) - start))
cat >"$out/image.env" <<EOF
# gpuprep test node image, made by test/vm/build-image.sh
KEY=$key
BUILT=$(date -u +%Y-%m-%dT%H:%M:%SZ)
BUILD_SECONDS=$secs
MIRROR=$mirror
SUITE=$suite
KERNEL_VERSION=$kver
SLURM_VERSION=$slurm_version
SYSTEMD_VERSION=$systemd_version
EOF
cp "$log" "$out/build.log"
chmod 0755 "$out"
mv -T "$out" "$final"

# Older images (other keys) are of no use any more, except to a VM that
# still runs from one (its qemu names the image folder): a later build
# removes those.
for old in "$cache"/*; do
	b=${old##*/}
	[ "$old" != "$final" ] && [ -d "$old" ] && [[ $b =~ ^[0-9a-f]{16}$ ]] || continue
	grep -qsx "SUITE=$suite" "$old/image.env" || continue # another release's image #release
	if grep -qsF "$old/" /proc/[0-9]*/cmdline; then
		say "keeping $old: a running VM uses it"
		continue
	fi
	rm -rf --one-file-system "$old"
done
rm -f "$cache/last-failed-build.log"
say "built $final in ${secs} s (kernel $kver, slurm $slurm_version, systemd $systemd_version)"
echo "$final"
