package vmnode

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// SerialTail is the last n lines of the serial console (kernel and systemd
// messages; kept across reboots).
func (v *VM) SerialTail(n int) string {
	b, err := os.ReadFile(v.SerialLog)
	if err != nil {
		return fmt.Sprintf("(no serial log: %v)", err)
	}
	return tail(strings.ReplaceAll(string(b), "\r", ""), n)
}

// diagCommand prints, in the VM, what explains a failed test: the node's
// state, the Slurm daemons' logs, gpuprep's syslog lines, warnings of this
// boot and failed units.
const diagCommand = `
echo "== sinfo"; sinfo -N -o '%N %T %E' 2>&1
echo "== squeue"; squeue 2>&1
echo "== slurmd.log"; tail -n 25 /var/log/slurm/slurmd.log 2>&1
echo "== slurmctld.log"; tail -n 15 /var/log/slurm/slurmctld.log 2>&1
echo "== journal: gpuprep"; journalctl -b --no-pager -q -n 25 -t gpuprep-prolog -t gpuprep-epilog 2>&1
echo "== journal: warnings"; journalctl -b --no-pager -q -n 25 -p warning 2>&1
echo "== failed units"; systemctl --failed --plain --no-legend 2>&1
`

// Diagnostics gathers, for a failed test's log, the node's state, log tails
// from the VM (over SSH, at most 30 s) and the serial console's tail. It
// runs even when ctx has expired (a wait that timed out is the usual
// reason to ask), under its own 30 s.
func (v *VM) Diagnostics(ctx context.Context) string {
	var b strings.Builder
	fmt.Fprintf(&b, "vm %s (ssh port %d, serial %s)\n", v.Dir, v.Port, v.SerialLog)
	if v.Running() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		out, stderr, err := v.Run(ctx, diagCommand)
		b.WriteString(out)
		if err != nil {
			fmt.Fprintf(&b, "(diagnostics: %v %s)\n", err, stderr)
			// The guest does not answer: say what qemu sees of it.
			fmt.Fprintf(&b, "== qemu monitor\n%s\n", v.monitor("info status", "info registers -a"))
		}
	} else {
		b.WriteString("qemu is not running\n")
	}
	if p := v.Panic(); p != "" {
		fmt.Fprintf(&b, "== the guest kernel panicked (not gpuprep: the VM is gone or rebooted):\n%s\n", p)
	}
	b.WriteString("== serial console\n")
	b.WriteString(v.SerialTail(20))
	return b.String()
}

// Panic is the serial console's last kernel oops or panic, with the lines
// before it ("" when none): a guest kernel that died (under TCG, sid's
// kernel once oopsed on an int3 in the scheduler) explains every failure
// after it.
func (v *VM) Panic() string {
	b, err := os.ReadFile(v.SerialLog)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.ReplaceAll(string(b), "\r", ""), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], "Kernel panic - not syncing") || strings.Contains(lines[i], "Oops: ") {
			return strings.Join(lines[max(0, i-3):min(len(lines), i+4)], "\n")
		}
	}
	return ""
}

// monitor runs commands on qemu's human monitor (DIR/monitor.sock, see
// test/vm/vm.sh) for a guest that stopped answering SSH, and returns the
// lines that say whether it runs, is paused or shut down, and where each
// vCPU is ("info status", "info registers -a": CPU# and RIP=). Each
// command gets a second to answer.
func (v *VM) monitor(cmds ...string) string {
	c, err := net.DialTimeout("unix", filepath.Join(v.Dir, "monitor.sock"), 2*time.Second)
	if err != nil {
		return fmt.Sprintf("(no monitor: %v)", err)
	}
	defer c.Close()
	var out strings.Builder
	buf := make([]byte, 4096)
	read := func() {
		c.SetReadDeadline(time.Now().Add(time.Second))
		for {
			n, err := c.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}
	read() // the greeting
	for _, cmd := range cmds {
		if _, err := c.Write([]byte(cmd + "\n")); err != nil {
			fmt.Fprintf(&out, "(%s: %v)", cmd, err)
			break
		}
		read()
	}
	// Keep the answers, not the monitor's echo of each keystroke, and of
	// the registers each vCPU's instruction pointer.
	var keep []string
	for _, l := range strings.Split(strings.ReplaceAll(out.String(), "\r", ""), "\n") {
		if strings.Contains(l, "VM status") || strings.HasPrefix(l, "CPU#") || strings.Contains(l, "RIP=") {
			keep = append(keep, strings.TrimSpace(l))
		}
	}
	if len(keep) == 0 {
		return "(the monitor said nothing)"
	}
	return strings.Join(keep, "\n")
}
