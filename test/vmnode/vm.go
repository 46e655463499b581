package vmnode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// NodeName is the VM's host name and Slurm node name; Partition its partition.
const (
	NodeName  = "gpunode"
	Partition = "debug"
)

// Options shape one boot. The zero value is fine.
type Options struct {
	// Dir holds the VM's overlay, serial log, qemu log and SSH control
	// socket; default a fresh folder under the system temp folder (kept
	// short: the control socket's path must fit a sockaddr_un).
	Dir string
	// Logger gets progress lines (booting, SSH up, ready); default none.
	Logger *slog.Logger
	// KeepDir leaves Dir (serial log, overlay) after Close, for a look at a
	// failed run; also when GPUPREP_VM_KEEP is set.
	KeepDir bool
}

// VM is one running test node.
type VM struct {
	Image     Image
	Dir       string // see Options.Dir
	Port      int    // 127.0.0.1:Port is the VM's SSH
	SerialLog string // the serial console (kernel, systemd) of every boot, appended
	// BootToSSH and BootToReady are how long Boot took from starting qemu
	// until SSH answered, and until the system was up and the node idle.
	BootToSSH, BootToReady time.Duration
	// FailedUnits are the units systemctl --failed listed when the boot
	// ended degraded (the last boot, after Reboot).
	FailedUnits []string

	log     *slog.Logger
	keepDir bool
	key     string // the VM's copy of the image's SSH key

	mu         sync.Mutex
	qemu       *exec.Cmd
	qemuErr    error
	done       chan struct{} // closed when qemu exited
	master     *exec.Cmd     // the SSH connection commands share (ControlMaster)
	masterDone chan struct{} // closed when master exited
	closed     bool
}

// Boot starts a VM from img on a throwaway overlay and waits, under ctx, for
// SSH, for systemd to finish starting (degraded is accepted; the failed
// units are in FailedUnits) and for Slurm's node to be idle. On error the VM
// is stopped and the error carries the tail of the serial console.
func Boot(ctx context.Context, img Image, opts Options) (*VM, error) {
	v := &VM{Image: img, log: opts.Logger, keepDir: opts.KeepDir || os.Getenv("GPUPREP_VM_KEEP") != ""}
	if v.log == nil {
		v.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	sweepStale()
	v.Dir = opts.Dir
	if v.Dir == "" {
		d, err := os.MkdirTemp("", "gpuprep-vm-")
		if err != nil {
			return nil, fmt.Errorf("vmnode: %w", err)
		}
		v.Dir = d
	} else if err := os.MkdirAll(v.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("vmnode: %w", err)
	}
	v.SerialLog = filepath.Join(v.Dir, "serial.log")
	// The VM's own copy of the key: a newer image build may remove img.Dir.
	key, err := os.ReadFile(img.Key)
	if err == nil {
		v.key = filepath.Join(v.Dir, "id_ed25519")
		err = os.WriteFile(v.key, key, 0o600)
	}
	if err != nil {
		v.Close()
		return nil, fmt.Errorf("vmnode: SSH key: %w", err)
	}

	start := time.Now()
	if err := v.startQemu(); err != nil {
		v.Close()
		return nil, err
	}
	v.log.Info("vm: booting", "dir", v.Dir, "port", v.Port, "release", img.Info["SUITE"], "kernel", img.Info["KERNEL_VERSION"], "slurm", img.Info["SLURM_VERSION"])
	if err := v.waitUp(ctx, ""); err != nil {
		v.Close()
		return nil, err
	}
	v.BootToSSH = time.Since(start)
	v.log.Info("vm: SSH up", "after", v.BootToSSH.Round(time.Second))
	if err := v.waitReady(ctx, false); err != nil {
		v.Close()
		return nil, err
	}
	v.BootToReady = time.Since(start)
	v.log.Info("vm: ready (node idle)", "after", v.BootToReady.Round(time.Second), "failed_units", v.FailedUnits)
	return v, nil
}

// startQemu runs test/vm/vm.sh qemu (which execs qemu) on a free port;
// a port taken between the check and qemu's bind is retried.
func (v *VM) startQemu() error {
	var lastErr error
	for range 3 {
		port, err := freePort()
		if err != nil {
			return err
		}
		logf, err := os.OpenFile(filepath.Join(v.Dir, "qemu.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("vmnode: %w", err)
		}
		cmd := exec.Command("bash", v.Image.VMScript, "qemu", v.Image.Dir, v.Dir, strconv.Itoa(port))
		cmd.Stdout, cmd.Stderr = logf, logf
		// qemu dies with the test binary, whatever kills it.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			logf.Close()
			return fmt.Errorf("vmnode: starting qemu: %w", err)
		}
		done := make(chan struct{})
		go func() {
			err := cmd.Wait()
			logf.Close()
			v.mu.Lock()
			v.qemuErr = err
			v.mu.Unlock()
			close(done)
		}()
		// qemu fails within a moment when it cannot bind the port.
		select {
		case <-done:
			out, _ := os.ReadFile(filepath.Join(v.Dir, "qemu.log"))
			lastErr = fmt.Errorf("vmnode: qemu exited at once: %s", strings.TrimSpace(string(out)))
			if bytes.Contains(out, []byte("host forwarding")) {
				continue
			}
			return lastErr
		case <-time.After(500 * time.Millisecond):
		}
		v.mu.Lock()
		v.qemu, v.done, v.Port = cmd, done, port
		v.mu.Unlock()
		if err := os.WriteFile(filepath.Join(v.Dir, "qemu.pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
			return fmt.Errorf("vmnode: %w", err)
		}
		return nil
	}
	return lastErr
}

// freePort is a TCP port on 127.0.0.1 that nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("vmnode: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Running says whether qemu still runs.
func (v *VM) Running() bool {
	v.mu.Lock()
	done := v.done
	v.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// QemuPID is qemu's process id (0 when not running).
func (v *VM) QemuPID() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.qemu == nil || v.qemu.Process == nil {
		return 0
	}
	return v.qemu.Process.Pid
}

// exited is the error for a qemu that is gone, with the serial console's tail.
func (v *VM) exited() error {
	v.mu.Lock()
	err := v.qemuErr
	v.mu.Unlock()
	out, _ := os.ReadFile(filepath.Join(v.Dir, "qemu.log"))
	return fmt.Errorf("vmnode: qemu exited (%v) %s\nserial console:\n%s", err, strings.TrimSpace(string(out)), v.SerialTail(30))
}

// waitUp waits for sshd to answer and opens the shared SSH connection; with
// oldBootID set, until the VM reports another boot id (after a reboot).
func (v *VM) waitUp(ctx context.Context, oldBootID string) error {
	for {
		if !v.Running() {
			return v.exited()
		}
		if ctx.Err() != nil {
			return fmt.Errorf("vmnode: no SSH: %w\nserial console:\n%s", ctx.Err(), v.SerialTail(30))
		}
		if sshBanner(v.Port) {
			if err := v.startMaster(ctx); err == nil {
				if oldBootID == "" {
					return nil
				}
				idCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
				id, err := v.BootID(idCtx)
				cancel()
				if err == nil && id != oldBootID {
					return nil
				}
				v.stopMaster() // the old boot, shutting down
			} else {
				v.log.Debug("vm: ssh not yet", "err", err)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// sshBanner says whether something on port sends an SSH banner: slirp
// accepts connections before the guest listens, so a connect alone says
// nothing.
func sshBanner(port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 2*time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 4)
	_, err = io.ReadFull(c, buf)
	return err == nil && string(buf) == "SSH-"
}

// waitReady waits for `systemctl is-system-running --wait` and for the node
// to be idle in sinfo.
// After a reboot (rebooted true) the node need only be back in Slurm:
// slurmctld, rebooted too, may have restored a job that ran on it (mixed,
// allocated) or set it down, which the test then deals with.
func (v *VM) waitReady(ctx context.Context, rebooted bool) error {
	out, _, err := v.Run(ctx, "systemctl is-system-running --wait")
	state := strings.TrimSpace(out)
	v.FailedUnits = nil
	switch state {
	case "running":
	case "degraded":
		failed, _, _ := v.Run(ctx, "systemctl --failed --plain --no-legend | cut -d' ' -f1")
		v.FailedUnits = strings.Fields(failed)
		v.log.Warn("vm: boot degraded", "failed_units", v.FailedUnits)
		v.restartSlurm(ctx)
	default:
		return fmt.Errorf("vmnode: system is %q (%v)\nserial console:\n%s", state, err, v.SerialTail(30))
	}
	states := []string{"idle"}
	if rebooted {
		states = append(states, "mixed", "allocated", "down", "drained", "draining", "completing")
	}
	if _, _, err := v.WaitNodeState(ctx, states...); err != nil {
		return fmt.Errorf("%w\n%s", err, v.Diagnostics(ctx))
	}
	return nil
}

// restartSlurm starts again, once, a Slurm daemon that failed during the
// boot (seen on a host at load 15, where a boot took 5 minutes to SSH and
// slurmd.service failed), after logging its journal: a daemon that fails
// for a reason of its own fails again, and the wait for the node says so.
func (v *VM) restartSlurm(ctx context.Context) {
	for _, u := range []string{"munge.service", "slurmctld.service", "slurmd.service"} {
		if !slices.Contains(v.FailedUnits, u) {
			continue
		}
		journal, _, _ := v.Run(ctx, "journalctl -b --no-pager -q -n 15 -u "+u)
		v.log.Warn("vm: a Slurm unit failed during the boot; starting it again", "unit", u, "journal", journal)
		if _, stderr, err := v.Run(ctx, "systemctl restart "+u); err != nil {
			v.log.Warn("vm: restart failed", "unit", u, "err", err, "stderr", stderr)
		}
	}
}

// BootID is the VM's /proc/sys/kernel/random/boot_id.
func (v *VM) BootID(ctx context.Context) (string, error) {
	out, _, err := v.Run(ctx, "cat /proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(out), err
}

// Reboot reboots the VM as a node reboots: the guest powers off
// (systemctl poweroff; qemu is killed after a minute) and a new qemu boots
// the same overlay, so the disk (gpuprep's /var/lib state, installed files)
// is kept and /run, the cgroups and the boot id are new. It waits as Boot
// does: SSH with a new boot id, systemd, the node idle (slurm.conf has
// ReturnToService=2). Port and QemuPID change; BootToSSH and BootToReady
// are this boot's. (A reboot inside the guest, `systemctl reboot`, also
// works, but qemu's warm reset with TCG made the next boot two to three
// times slower.)
func (v *VM) Reboot(ctx context.Context) error {
	old, err := v.BootID(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := v.powerOff(ctx, time.Minute); err != nil {
		return err
	}
	if err := v.startQemu(); err != nil {
		return err
	}
	if err := v.waitUp(ctx, old); err != nil {
		return err
	}
	v.BootToSSH = time.Since(start)
	if err := v.waitReady(ctx, true); err != nil {
		return err
	}
	v.BootToReady = time.Since(start)
	v.log.Info("vm: rebooted", "ssh_after", v.BootToSSH.Round(time.Second), "ready_after", v.BootToReady.Round(time.Second))
	return nil
}

// powerOff runs systemctl poweroff in the guest and waits for qemu to exit;
// after timeout qemu is killed by its pid.
func (v *VM) powerOff(ctx context.Context, timeout time.Duration) error {
	v.mu.Lock()
	qemu, done := v.qemu, v.done
	v.mu.Unlock()
	if qemu == nil || !v.Running() {
		v.stopMaster()
		return nil
	}
	runCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	if _, _, err := v.Run(runCtx, "systemctl poweroff --no-block"); err != nil {
		v.log.Warn("vm: poweroff", "err", err)
	}
	cancel()
	v.stopMaster()
	var err error
	select {
	case <-done:
	case <-time.After(timeout):
		v.log.Warn("vm: no power-off: killing qemu", "after", timeout, "pid", qemu.Process.Pid)
		if kerr := qemu.Process.Kill(); kerr != nil && !errors.Is(kerr, os.ErrProcessDone) {
			err = fmt.Errorf("vmnode: kill qemu: %w", kerr)
		}
		<-done
	}
	return err
}

// Close powers the VM off (systemctl poweroff, then qemu is killed by its
// pid after 30 s), and removes the overlay and Dir (kept with
// Options.KeepDir or GPUPREP_VM_KEEP). Calling it again does nothing.
func (v *VM) Close() error {
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		return nil
	}
	v.closed = true
	v.mu.Unlock()

	var errs []error
	if err := v.powerOff(context.Background(), 30*time.Second); err != nil {
		errs = append(errs, err)
	}
	if v.keepDir {
		v.log.Info("vm: kept", "dir", v.Dir)
	} else if err := os.RemoveAll(v.Dir); err != nil {
		errs = append(errs, fmt.Errorf("vmnode: %w", err))
	} else {
		v.log.Info("vm: closed")
	}
	return errors.Join(errs...)
}

// sweepStale removes the folders Boot left in the temp folder when its test
// binary was killed before Close (gpuprep-vm-*, about 40 MB each): those
// whose qemu.pid names no running qemu of that folder, and those without a
// qemu.pid older than an hour (a Boot writes it within a second).
func sweepStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "gpuprep-vm-*"))
	for _, d := range dirs {
		fi, err := os.Lstat(d)
		if err != nil || !fi.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(d, "qemu.pid"))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) && time.Since(fi.ModTime()) > time.Hour {
				os.RemoveAll(d)
			}
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err == nil && bytes.Contains(cmdline, []byte(d+"/")) {
			continue // its VM still runs
		}
		os.RemoveAll(d)
	}
}
