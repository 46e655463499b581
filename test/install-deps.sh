#!/bin/sh
# Installs what the end-to-end tests need on Debian: Slurm (slurmctld, slurmd
# and the clients, package slurm-wlm), munge, hwloc (lstopo-no-graphics, the
# oracle for the node model), libhwloc-dev and gcc (internal/slurmcores
# compiles its oracle of Slurm's core numbering against libhwloc), and strace
# (the crash tests kill the hooks at chosen syscalls with it), acl (getfacl:
# the job evidence's ACL entry is read back with it), and what
# test/pkgtest checks the packages with: lintian, rpm, rpm2cpio, cpio, debootstrap, man-db,
# groff and logrotate, and what examples/prometheus tests its rules and
# dashboard with: prometheus (promtool) and prometheus-node-exporter, without
# their Recommends (prometheus-node-exporter-collectors would add timers).
# Idempotent: does nothing when all are there.
# While apt runs, /usr/sbin/policy-rc.d (exit 101) keeps the packages' init
# scripts from starting system daemons; it is removed afterwards if this
# script created it. The tests start their own private daemons
# (test/slurmharness), so afterwards the services the packages enabled at
# boot (slurmctld, slurmd, munge, prometheus, prometheus-node-exporter) are
# disabled again, for the packages this script installed only: a node that
# already ran them keeps its setup. Should one of them run anyway, the tests
# do not mind: they give their daemons free ports of their own.
set -eu

have() {
	command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/sbin/$1" ]
}

# The packages test/pkgtest needs (groff-base has groff; man-db has man),
# and npm, which fetches zig for the EL8 build (packaging/el8).
pkgtools="lintian rpm rpm2cpio cpio debootstrap man-db groff-base logrotate acl"
have npm || pkgtools="$pkgtools npm"
# What examples/prometheus's tests run: promtool (package prometheus),
# prometheus and prometheus-node-exporter.
promtools="prometheus prometheus-node-exporter"

missing=""
for c in slurmctld slurmd munged srun sbatch scontrol sinfo squeue scancel lstopo-no-graphics strace \
	lintian rpm rpm2cpio cpio debootstrap man groff logrotate getfacl npm promtool prometheus prometheus-node-exporter; do
	have "$c" || missing="$missing $c"
done
have cc || missing="$missing cc"
[ -e /usr/include/hwloc.h ] || missing="$missing hwloc.h"
if [ -z "$missing" ]; then
	echo "install-deps: slurm, munge, hwloc, libhwloc-dev, gcc, strace, the packaging tools and prometheus are installed"
	exit 0
fi
echo "install-deps: missing:$missing"

if [ "$(id -u)" != 0 ]; then
	echo "install-deps: must run as root to install slurm-wlm munge hwloc libhwloc-dev gcc strace $pkgtools $promtools" >&2
	exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "install-deps: no apt-get: install slurm-wlm, munge, hwloc, libhwloc-dev, gcc, strace, $pkgtools and $promtools by hand" >&2
	exit 1
fi

# Which of the daemons' packages were there before (their boot setup is the
# site's, left alone).
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'ok installed'; }
new_services=""
for svc in slurmctld slurmd munge $promtools; do
	installed "$svc" || new_services="$new_services $svc"
done

policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ] && [ ! -L "$policy" ]; then
	printf '#!/bin/sh\n# written by gpuprep test/install-deps.sh while installing packages\nexit 101\n' >"$policy"
	chmod 755 "$policy"
	trap 'rm -f "$policy"' EXIT
	trap 'exit 130' INT TERM
fi

export DEBIAN_FRONTEND=noninteractive
timeout 300 apt-get update
timeout 900 apt-get install -y -o DPkg::Lock::Timeout=120 slurm-wlm munge hwloc libhwloc-dev gcc strace $pkgtools
timeout 900 apt-get install -y --no-install-recommends -o DPkg::Lock::Timeout=120 $promtools

still=""
for c in $missing; do
	case $c in
	hwloc.h) [ -e /usr/include/hwloc.h ] || still="$still $c" ;;
	*) have "$c" || still="$still $c" ;;
	esac
done
if [ -n "$still" ]; then
	echo "install-deps: still missing after install:$still" >&2
	exit 1
fi
echo "install-deps: installed slurm-wlm munge hwloc libhwloc-dev gcc strace $pkgtools $promtools"

# Debian's postinst enables the daemons at boot even when policy-rc.d kept
# them from starting now: undo that for what this script installed.
for svc in $new_services; do
	if command -v systemctl >/dev/null 2>&1; then
		systemctl disable --quiet "$svc" 2>/dev/null || true
	elif command -v update-rc.d >/dev/null 2>&1; then
		update-rc.d "$svc" disable >/dev/null 2>&1 || true
	fi
done
[ -z "$new_services" ] || echo "install-deps: disabled at boot (the tests run their own daemons):$new_services"
