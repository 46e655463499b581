#!/bin/bash
# vm.sh: boot a throwaway gpuprep test node VM (the image of build-image.sh).
#
#   test/vm/vm.sh boot        build the image if needed, boot a VM in the
#                             background, wait for SSH, print how to log in
#   test/vm/vm.sh ssh [CMD]   log in (or run CMD) as root
#   test/vm/vm.sh install     install this checkout's gpuprep in it as an
#                             admin would (make install, copied in)
#   test/vm/vm.sh stop        power it off and delete its overlay
#   test/vm/vm.sh status      say whether it runs, and where
#   test/vm/vm.sh qemu IMAGE DIR PORT [-daemonize]
#                             run qemu itself (in the foreground unless
#                             -daemonize): the one definition of the VM's
#                             hardware, used by boot and by test/vmnode
#
# The VM: 4 vCPUs as 2 sockets x 2 cores, two NUMA nodes of 1 GiB (one per
# socket), TCG (no KVM needed), a virtio disk that is a throwaway qcow2
# overlay DIR/overlay.qcow2 over the cached raw image (never written to),
# qemu's user network with 127.0.0.1:PORT forwarded to the VM's SSH, the
# serial console appended to DIR/serial.log, the qemu monitor on
# DIR/monitor.sock.
# Under TCG a boot takes a minute or two.
#
# Environment: GPUPREP_VM_STATE (the folder of the VM of boot/ssh/stop,
# default /tmp/gpuprep-vm), GPUPREP_VM_CACHE and GPUPREP_VM_RELEASE (the
# Debian release of the image: bookworm, the default, trixie or sid; see
# build-image.sh). Give each release's VM its own GPUPREP_VM_STATE to run
# them side by side.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
state=${GPUPREP_VM_STATE:-/tmp/gpuprep-vm}

say() { echo "vm: $*" >&2; }
die() {
	say "$*"
	exit 1
}

# run_qemu IMAGE DIR PORT [qemu args...]: make DIR/overlay.qcow2 (when absent)
# and exec qemu.
run_qemu() {
	local img=$1 dir=$2 port=$3
	shift 3
	[ -f "$img/rootfs.img" ] || die "no image in $img (run test/vm/build-image.sh)"
	mkdir -p "$dir"
	if [ ! -f "$dir/overlay.qcow2" ]; then
		qemu-img create -q -f qcow2 -F raw -b "$img/rootfs.img" "$dir/overlay.qcow2"
	fi
	# qboot (qemu's minimal firmware, in qemu-system-data) starts the kernel
	# in well under a second; SeaBIOS takes several under TCG.
	local bios=()
	[ -f /usr/share/qemu/qboot.rom ] && bios=(-bios /usr/share/qemu/qboot.rom)
	# -no-reboot: a guest that resets (the image's panic=-1 after a kernel
	# panic) stops qemu instead of booting again behind the test's back
	# (seen once: sid's kernel 7.2 oopsed on an int3 under TCG, rebooted,
	# and slurmctld had lost a job's script on the unclean disk). A node's
	# reboot (vmnode.Reboot) powers off and starts a new qemu.
	exec qemu-system-x86_64 -name gpuprep-vm -nodefaults -no-user-config -display none -no-reboot "${bios[@]}" \
		-machine pc -accel tcg,thread=multi -cpu max \
		-smp 4,sockets=2,cores=2,threads=1 -m 2048 \
		-object memory-backend-ram,id=mem0,size=1024M -numa node,nodeid=0,memdev=mem0 \
		-object memory-backend-ram,id=mem1,size=1024M -numa node,nodeid=1,memdev=mem1 \
		-numa cpu,node-id=0,socket-id=0 -numa cpu,node-id=1,socket-id=1 \
		-kernel "$img/vmlinuz" -initrd "$img/initrd.img" -append "$(cat "$img/cmdline")" \
		-drive "file=$dir/overlay.qcow2,format=qcow2,if=virtio,cache=unsafe,discard=unmap" \
		-netdev "user,id=n0,hostfwd=tcp:127.0.0.1:$port-:22" -device virtio-net-pci,netdev=n0,romfile= \
		-chardev "file,id=serial0,path=$dir/serial.log,append=on" -serial chardev:serial0 -monitor "unix:$dir/monitor.sock,server,nowait" \
		"$@"
}

# free_port: a TCP port on 127.0.0.1 nothing listens on (qemu fails to start
# when it was taken meanwhile; boot then tries another).
free_port() {
	local p
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 20000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	die "no free port"
}

# ssh_opts: one SSH connection is kept open (ControlMaster, for 5 minutes
# after the last use): a fresh login costs seconds of emulated CPU.
ssh_opts() {
	local key=$state/id_ed25519
	[ -f "$key" ] || key=$(cat "$state/image")/id_ed25519 # a VM booted by an older vm.sh
	echo -o ControlMaster=auto -o "ControlPath=$state/ssh.ctl" -o ControlPersist=300 -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
		-o LogLevel=ERROR -o ConnectTimeout=10 -p "$(cat "$state/port")" -i "$key"
}

running() {
	[ -f "$state/qemu.pid" ] || return 1
	local pid
	pid=$(cat "$state/qemu.pid")
	[ -n "$pid" ] && [ -d "/proc/$pid" ] && grep -q qemu-system "/proc/$pid/cmdline" 2>/dev/null
}

boot() {
	if running; then
		say "already running (pid $(cat "$state/qemu.pid")); log in with:"
		echo "  ssh $(ssh_opts) root@127.0.0.1"
		return
	fi
	local img t0 port ok=""
	img=$("$here/build-image.sh" | tail -n1)
	rm -rf --one-file-system "$state"
	mkdir -p "$state"
	chmod 0700 "$state"
	echo "$img" >"$state/image"
	# The VM's own copy of the key: a newer image build may remove $img.
	install -m 0600 "$img/id_ed25519" "$state/id_ed25519"
	t0=$(date +%s)
	for _ in 1 2 3; do
		port=$(free_port)
		if (run_qemu "$img" "$state" "$port" -daemonize -pidfile "$state/qemu.pid") 2>"$state/qemu.err"; then
			ok=1
			break
		fi
		grep -q "hostfwd\|Could not set up host forwarding" "$state/qemu.err" || break
	done
	[ -n "$ok" ] || die "qemu did not start: $(cat "$state/qemu.err")"
	echo "$port" >"$state/port"
	say "booting (pid $(cat "$state/qemu.pid"), serial console: $state/serial.log); waiting for SSH"
	# shellcheck disable=SC2046
	until ssh $(ssh_opts) root@127.0.0.1 true 2>/dev/null; do
		running || die "qemu exited; serial console: $(tail -n 20 "$state/serial.log")"
		[ $(($(date +%s) - t0)) -lt 600 ] || die "no SSH after 600 s; serial console: $state/serial.log"
		sleep 2
	done
	say "SSH up after $(($(date +%s) - t0)) s; Slurm:"
	# shellcheck disable=SC2046
	ssh $(ssh_opts) root@127.0.0.1 'systemctl is-system-running --wait >/dev/null; for i in $(seq 60); do [ "$(sinfo -h -o %T)" = idle ] && break; sleep 1; done; sinfo' || true
	echo
	echo "Log in:   ssh -p $port -i $state/id_ed25519 root@127.0.0.1"
	echo "          (or: $0 ssh)"
	echo "Install:  $0 install   (this checkout's gpuprep: make install, copied in)"
	echo "Stop:     $0 stop"
}

# install: make install into a staging folder, copy it into the VM, create
# gpuprep's run folder (tmpfiles.d). The Prolog=/Epilog= of the VM's
# slurm.conf are then gpuprep's; slurmd runs them anew for each job.
install_gpuprep() {
	running || die "not running (test/vm/vm.sh boot)"
	local repo stage
	repo=$(cd "$here/../.." && pwd)
	stage=$(mktemp -d)
	# shellcheck disable=SC2064
	trap "rm -rf '$stage'" EXIT
	chmod 0755 "$stage"
	make -C "$repo" install DESTDIR="$stage" PREFIX=/usr/local >&2
	# shellcheck disable=SC2046
	tar -C "$stage" --owner=0 --group=0 --numeric-owner -czf - . |
		ssh $(ssh_opts) root@127.0.0.1 'tar -xzf - -C / --no-overwrite-dir && systemd-tmpfiles --create /etc/tmpfiles.d/gpuprep.conf'
	say "installed /usr/local/sbin/gpuprep-prolog, -epilog, -gres and /usr/local/bin/srunwrap"
	# shellcheck disable=SC2046
	if ssh $(ssh_opts) root@127.0.0.1 test -e /etc/gpuprep/gpuprep.toml; then
		say "configuration: /etc/gpuprep/gpuprep.toml"
	else
		say "no /etc/gpuprep/gpuprep.toml: the built-in configuration is in force (example: /etc/gpuprep/gpuprep.toml.example)"
	fi
}

stop() {
	if ! running; then
		say "not running"
		rm -rf --one-file-system "$state"
		return
	fi
	local pid
	pid=$(cat "$state/qemu.pid")
	# shellcheck disable=SC2046
	timeout 20 ssh $(ssh_opts) root@127.0.0.1 'systemctl poweroff' 2>/dev/null || true
	# shellcheck disable=SC2046
	ssh $(ssh_opts) -O exit root@127.0.0.1 2>/dev/null || true
	for _ in $(seq 60); do
		[ -d "/proc/$pid" ] || break
		sleep 1
	done
	if [ -d "/proc/$pid" ]; then
		say "no power-off after 60 s: killing qemu (pid $pid)"
		kill "$pid" 2>/dev/null || true
		sleep 1
	fi
	rm -rf --one-file-system "$state"
	say "stopped"
}

case "${1:-}" in
boot) boot ;;
ssh)
	shift
	running || die "not running (test/vm/vm.sh boot)"
	# shellcheck disable=SC2046
	exec ssh $(ssh_opts) root@127.0.0.1 "$@"
	;;
stop) stop ;;
install) install_gpuprep ;;
status)
	if running; then
		echo "running: pid $(cat "$state/qemu.pid"), ssh -p $(cat "$state/port") -i $state/id_ed25519 root@127.0.0.1"
	else
		echo "not running"
	fi
	;;
qemu)
	shift
	[ $# -ge 3 ] || die "usage: $0 qemu IMAGE DIR PORT [qemu args]"
	run_qemu "$@"
	;;
*)
	sed -n '2,/^set -e/p' "$0" | sed -e '/^set -e/d' -e 's/^# \{0,1\}//' >&2
	exit 2
	;;
esac
