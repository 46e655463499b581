package hookcmd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gpuprep/internal/hooktest"
)

// xidNode is a DGX H100 fixture root whose kernel log (/dev/kmsg, the
// fixture form: "PRIO,SEQ,USEC,FLAGS;MSG" a line) a test writes, and the
// prolog and epilog run on it with --json. GPU 0 is 0000:18:00.0.
type xidNode struct {
	t                *testing.T
	root, cfg, spool string
	job              int
}

// hookRun is what a test reads of a run: exit code, stderr, and the
// outcome's warnings and health report (--json).
type hookRun struct {
	code     int
	stderr   string
	Warnings []string `json:"warnings"`
	Health   struct {
		Results []struct{ Check, Scope, Status, Severity, Reason, Value string }
		XIDs    []struct {
			Code  int      `json:"code"`
			BusID string   `json:"bus_id"`
			Jobs  []string `json:"jobs"`
		} `json:"xids"`
		History map[string][]struct {
			Code int `json:"code"`
		} `json:"xid_history"`
	} `json:"health"`
}

func newXIDNode(t *testing.T) *xidNode {
	t.Helper()
	root, cfg, spool := hooktest.HealthRoot(t, "")
	return &xidNode{t: t, root: root, cfg: cfg, spool: spool}
}

// kmsg replaces the kernel log with lines.
func (n *xidNode) kmsg(lines ...string) {
	n.t.Helper()
	if err := os.WriteFile(filepath.Join(n.root, "dev/kmsg"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		n.t.Fatal(err)
	}
}

// appendKmsg adds lines to the kernel log.
func (n *xidNode) appendKmsg(lines ...string) {
	n.t.Helper()
	f, err := os.OpenFile(filepath.Join(n.root, "dev/kmsg"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		n.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
		n.t.Fatal(err)
	}
}

// run runs op ("prolog" or "epilog") for a job on GPU 0; a prolog is a new
// job, an epilog ends the last one.
func (n *xidNode) run(op string) hookRun {
	n.t.Helper()
	if op == "prolog" {
		n.job++
	}
	env := map[string]string{"SLURM_JOB_ID": strconv.Itoa(100 + n.job), "SLURM_JOB_USER": "mallory", "SLURM_JOB_GPUS": "0",
		"SLURM_SCRIPT_CONTEXT": op + "_slurmd"}
	code, out, stderr := mainRun(op, env, "--root", n.root, "--gpu-backend", "mock:dgxh100", "--config", n.cfg, "--state-dir", n.spool, "--json")
	r := hookRun{code: code, stderr: stderr}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		n.t.Fatalf("%s: exit %d, %v\n%s\n%s", op, code, err, out, stderr)
	}
	return r
}

// xid is the run's xid results.
func (r hookRun) xid() []string {
	var out []string
	for _, x := range r.Health.Results {
		if x.Check == "xid" {
			out = append(out, x.Scope+" "+x.Status+" "+x.Severity+" "+x.Reason+x.Value)
		}
	}
	return out
}

// clean says whether the run passed with "no new XIDs" and no health
// warning.
func (r hookRun) clean() bool {
	x := r.xid()
	for _, w := range r.Warnings {
		if strings.HasPrefix(w, "health: ") {
			return false
		}
	}
	return r.code == 0 && len(x) == 1 && x[0] == "node ok  no new XIDs" && len(r.Health.XIDs) == 0
}

const (
	xid79   = "NVRM: Xid (PCI:0000:18:00): 79, pid=4242, name=python, GPU has fallen off the bus."
	reset18 = "NVRM: GPU 0000:18:00.0: GPU reset completed"
)

// Xid text a user can put into the kernel log is not an Xid: a mount
// option the kernel echoes in a kernel record (from a user namespace:
// `unshare -Urm mount -t tmpfs -o "NVRM: Xid (...): 79" none /mnt`), a
// line written to /dev/kmsg (user facility), Xid text in the middle of a
// kernel record. Neither the next prolog nor the user's own epilog fails.
func TestForgedXIDsDoNotDrain(t *testing.T) {
	n := newXIDNode(t)
	seq := 0
	for _, line := range []string{
		"3,%d,100,-;tmpfs: Unknown parameter '" + xid79 + "'", // mount echo
		"12,%d,100,-;" + xid79,                                // user facility
		"188,%d,100,-;" + xid79,                               // local7 facility
		"6,%d,100,-;usb 1-1: Product: " + xid79,               // Xid text in the middle
		"4,%d,100,-;python[4242]: " + xid79,                   // after a name the user chose
		"4,%d,100,-; " + xid79,
	} {
		for _, op := range []string{"prolog", "epilog"} {
			seq++
			n.appendKmsg(fmt.Sprintf(line, seq))
			if r := n.run(op); !r.clean() {
				t.Errorf("%s after %q: exit %d %s %v %v", op, fmt.Sprintf(line, seq), r.code, r.stderr, r.xid(), r.Warnings)
			}
		}
	}
}

// The driver's genuine Xid lines still drain: with "PCI:", without it
// (older drivers), with MIG attribution, and with a process name that
// holds Xid text (parsed from the driver's prefix only). The GPU UUID line
// the driver prints first is not an Xid.
func TestGenuineXIDsDrain(t *testing.T) {
	n := newXIDNode(t)
	n.appendKmsg(
		"4,1,100,-;NVRM: GPU at PCI:0000:18:00: GPU-5d9b7a4e-3c8d-2f1e-9a0b-6c7d8e9f0a1b",
		"4,2,110,-;NVRM: Xid (PCI:0000:18:00 GPU-I:05 GPU-CI:01): 94, pid=7194, name=python, Contained: CE User Channel",
		"4,3,120,-;NVRM: Xid (0000:18:00): 48, pid=7, name=): 13, x, An uncorrectable double bit error",
		"4,4,130,-;"+xid79,
	)
	r := n.run("prolog")
	want := "gpuprep-prolog: health: XID79 reboot: GPU 0 (0000:18:00.0): Xid 94 (pid=7194, name=python, Contained: CE User Channel)" +
		"; Xid 48 (pid=7, name=): 13, x, An uncorrectable double bit error); Xid 79 (pid=4242, name=python, GPU has fallen off the bus.)\n"
	if r.code != 1 || r.stderr != want {
		t.Errorf("exit %d, stderr %q, want %q", r.code, r.stderr, want)
	}
	if len(r.Health.XIDs) != 3 || r.Health.XIDs[0].Code != 94 || r.Health.XIDs[1].Code != 48 || r.Health.XIDs[2].Code != 79 {
		t.Errorf("xids %+v", r.Health.XIDs)
	}
	// New once; Xid 79 then stands against GPU 0 (94 and 48 do not while
	// its row remapping reads clear).
	r = n.run("prolog")
	if want := "gpuprep-prolog: health: XID79 reboot: GPU 0 (0000:18:00.0): Xid 79 not cleared (1 time; pid=4242, name=python, GPU has fallen off the bus.)\n"; r.code != 1 || r.stderr != want || len(r.Health.XIDs) != 0 {
		t.Errorf("after: exit %d %q %v, want %q", r.code, r.stderr, r.Health.XIDs, want)
	}
}

// No GPU reset line clears a GPU's XID history, whether a user forges it
// (mount echo, user facility) or the driver prints it: the Xid stands and
// the next prolog on that GPU fails.
func TestResetLinesKeepHistory(t *testing.T) {
	n := newXIDNode(t)
	n.appendKmsg("4,1,100,-;" + xid79)
	if r := n.run("prolog"); r.code != 1 || len(r.Health.History["0000:18:00.0"]) != 1 {
		t.Fatalf("Xid 79: exit %d %s %+v", r.code, r.stderr, r.Health.History)
	}
	n.appendKmsg("3,2,200,-;tmpfs: Unknown parameter '"+reset18+"'", "14,3,300,-;"+reset18, "4,4,400,-;"+reset18)
	r := n.run("prolog")
	if r.code != 1 || len(r.Health.XIDs) != 0 || len(r.Health.History["0000:18:00.0"]) != 1 || !strings.Contains(r.stderr, "Xid 79 not cleared") {
		t.Errorf("reset lines: exit %d %q %v history %+v", r.code, r.stderr, r.xid(), r.Health.History)
	}
}

// Kernel log records lost before gpuprep read them (the log overflowed,
// which anyone can force) are "unknown": a warning naming them, neither a
// drain nor "no new XIDs". Between runs: the log starts above the
// watermark. While reading: the sequence numbers jump (an EPIPE read). The
// job runs on GPU 0; the Xid 79 that stands is GPU 3's.
func TestLostKernelLogRecords(t *testing.T) {
	n := newXIDNode(t)
	const xid79gpu3 = "NVRM: Xid (PCI:0000:5d:00): 79, pid=4242, name=python, GPU has fallen off the bus."
	n.appendKmsg("4,1,100,-;" + xid79gpu3)
	if r := n.run("prolog"); r.code != 1 {
		t.Fatalf("Xid 79: exit %d %s", r.code, r.stderr)
	}
	// The watermark is 2; the log now starts at 50.
	n.kmsg("6,50,5000,-;tmpfs: Unknown parameter 'x'", "4,51,5100,-;"+reset18)
	r := n.run("prolog")
	// A warning names its code and action, as a drain reason does.
	const lost = "health: XID_UNKNOWN investigate: XIDs unknown: kernel log records 2-49 were lost before gpuprep read them (the log overflowed); no GPU's XID history is cleared by this run"
	if r.code != 0 || len(r.Warnings) == 0 || !contains(r.Warnings, lost) {
		t.Errorf("gap between runs: exit %d %s warnings %q", r.code, r.stderr, r.Warnings)
	}
	if x := r.xid(); len(x) != 1 || x[0] != "node fail warn "+strings.TrimPrefix(lost, "health: XID_UNKNOWN investigate: ") {
		t.Errorf("xid result %q", x)
	}
	if len(r.Health.History["0000:5d:00.0"]) != 1 {
		t.Errorf("the history after a gap: %+v", r.Health.History)
	}
	// Records 53-59 overwritten while reading.
	n.appendKmsg("6,52,5200,-;a", "6,60,6000,-;b")
	r = n.run("epilog")
	if r.code != 0 || !contains(r.Warnings, strings.Replace(lost, "2-49", "53-59", 1)) {
		t.Errorf("gap while reading: exit %d %s warnings %q", r.code, r.stderr, r.Warnings)
	}
	// Warned once; a genuine Xid after a gap still drains, with the warning.
	n.appendKmsg("6,61,6100,-;c")
	if r := n.run("prolog"); !r.clean() {
		t.Errorf("after the gaps: exit %d %v %v", r.code, r.xid(), r.Warnings)
	}
	n.appendKmsg("6,70,7000,-;d", "4,71,7100,-;NVRM: Xid (PCI:0000:5d:00): 48, pid=1, name=x, DBE")
	r = n.run("prolog")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "gpuprep-prolog: health: XID48 reset_gpu: GPU 3 (0000:5d:00.0): Xid 48 ") {
		t.Errorf("Xid after a gap: exit %d %s", r.code, r.stderr)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
