package health

import (
	"os"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"gpuprep/internal/gpumock"
	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
	"gpuprep/lib/textfmt"
)

// kern is a kernel-facility record (PRIO 4: LOG_KERN, KERN_WARNING, as
// the driver's lines are logged).
func kern(seq uint64, msg string) Record { return Record{Prio: 4, Seq: seq, Msg: msg} }

// The driver's Xid lines, as its RC code prints them (kernel_rc.c): with
// and without "PCI:", with MIG attribution, with and without a process.
func TestParseXID(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		code int
		bus  string
		mig  string
		text string
	}{
		{"NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python, GPU has fallen off the bus.", 79, "0000:18:00.0", "", "pid=1234, name=python, GPU has fallen off the bus."},
		{"NVRM: Xid (PCI:0000:9A:00): 48, pid=5, name=x, An uncorrectable double bit error", 48, "0000:9a:00.0", "", "pid=5, name=x, An uncorrectable double bit error"},
		{"NVRM: Xid (0000:01:00): 3, C 00000005", 3, "0000:01:00.0", "", "C 00000005"},
		{"NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: CE User Channel (0x9). RST: No, D-RST: No", 94, "0000:01:00.0", "GPU-I:05", "pid=7194, Contained: CE User Channel (0x9). RST: No, D-RST: No"},
		{"NVRM: Xid (PCI:0000:01:00 GPU-I:05 GPU-CI:01): 95, pid=7062, Uncontained: LTC TAG (0x2, 0x1). RST: Yes, D-RST: No", 95, "0000:01:00.0", "GPU-I:05 GPU-CI:01", "pid=7062, Uncontained: LTC TAG (0x2, 0x1). RST: Yes, D-RST: No"},
		{"NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.", 79, "0000:18:00.0", "", "GPU has fallen off the bus."},
		// The user names the process: what follows the prefix is text.
		{"NVRM: Xid (PCI:0000:18:00): 13, pid=7, name=): 79, x, Graphics Exception", 13, "0000:18:00.0", "", "pid=7, name=): 79, x, Graphics Exception"},
	} {
		x, ok := ParseXID(kern(7, tc.msg))
		if !ok || x.Code != tc.code || x.BusID != tc.bus || x.MIG != tc.mig || x.Seq != 7 || x.Text != textfmt.Fit(tc.text, 60) {
			t.Errorf("%q: %+v %v", tc.msg, x, ok)
		}
	}
	for _, rec := range []Record{
		kern(1, "NVRM: loading NVIDIA UNIX x86_64 Kernel Module"),
		// A mount option the kernel echoes in a kernel record.
		kern(2, "tmpfs: Unknown parameter 'NVRM: Xid (PCI:0000:18:00): 79'"),
		// Written to /dev/kmsg by a user: LOG_USER (PRIO 12), or any
		// facility but the kernel's.
		{Prio: 12, Seq: 3, Msg: "NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=x, GPU has fallen off the bus."},
		{Prio: 8*23 + 4, Seq: 4, Msg: "NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=x, GPU has fallen off the bus."},
		kern(5, " NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=x, GPU has fallen off the bus."),
	} {
		if x, ok := ParseXID(rec); ok {
			t.Errorf("%+v read as %+v", rec, x)
		}
	}
}

// Xid 154's line names the action the GPU's recovery changed to: the
// number after "to 0x", whatever name the driver gives it; a process name
// a user chose cannot stand in for it (the driver's text is the line's
// end). A line that does not say leaves it unknown.
func TestParseXID154(t *testing.T) {
	for msg, want := range map[string]string{
		"NVRM: Xid (PCI:0000:18:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)":                            "GPU reset",
		"NVRM: Xid (PCI:0000:18:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (PF FLR)":                                        "GPU reset",
		"NVRM: Xid (PCI:0000:18:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (OS Reboot)":                                     "node reboot",
		"NVRM: Xid (PCI:0000:18:00): 154, GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)":                            "none",
		"NVRM: Xid (PCI:0000:18:00): 154, pid=9, name=to 0x0 (None), GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)":    "drain and reset",
		"NVRM: Xid (PCI:0000:18:00): 154, pid=9, name=from 0x1 (x, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)": "node reboot",
	} {
		x, ok := ParseXID(kern(1, msg))
		if !ok || x.To == nil || x.To.String() != want {
			t.Errorf("%q: %+v %v, want to %s", msg, x, ok, want)
		}
	}
	for _, msg := range []string{
		"NVRM: Xid (PCI:0000:18:00): 154, GPU recovery action changed",
		"NVRM: Xid (PCI:0000:18:00): 79, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)",
	} {
		if x, ok := ParseXID(kern(1, msg)); !ok || x.To != nil {
			t.Errorf("%q: %+v %v, want no action", msg, x, ok)
		}
	}
}

// Driver lines about resets are not Xids and clear nothing: only the
// driver's recovery action, a reboot or an admin's clear do (State).
func TestResetLinesClearNothing(t *testing.T) {
	st := &State{}
	x := kern(1, "NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=x, GPU has fallen off the bus.")
	k := KernelLog{Records: []Record{x}, N: 2, First: 1, Last: 2}
	st.Advance(bootA, k)
	var recs []Record
	for i, msg := range []string{"NVRM: GPU 0000:18:00.0: GPU reset completed", "NVRM: GPU 0000:18:00.0: GPU reset failed",
		"NVRM: GPU 0000:18:00.0: GPU reset required", "NVRM: GPU at PCI:0000:18:00: GPU not recovered", "NVRM: GPU at PCI:0000:18:00: GPU recovered from error"} {
		recs = append(recs, kern(uint64(3+i), msg))
	}
	if fresh, lost := st.Advance(bootA, KernelLog{Records: recs, N: len(recs), First: 3, Last: uint64(2 + len(recs))}); len(fresh) != 0 || len(lost) != 0 {
		t.Fatalf("reset lines: fresh %+v lost %+v", fresh, lost)
	}
	if h := st.History["0000:18:00.0"]; len(h) != 1 || h[0].Code != 79 {
		t.Errorf("history after reset lines: %+v", st.History)
	}
}

func TestXIDSeverity(t *testing.T) {
	h := config.Default().Health
	for code, want := range map[int]string{79: "fatal", 48: "fatal", 13: "warn", 43: "warn", 999: "warn", 154: "warn"} {
		if got := XIDSeverity(h, code, nil); got != want {
			t.Errorf("Xid %d: %s, want %s", code, got, want)
		}
	}
	// Xid 154 by the action it changed to, whatever the lists say.
	none, reboot := gpu.RecoveryNone, gpu.RecoveryNodeReboot
	h.XIDFatal = append(h.XIDFatal, 154)
	if got := XIDSeverity(h, 154, &none); got != "warn" {
		t.Errorf("Xid 154 to none: %s", got)
	}
	h.XIDFatal = nil
	if got := XIDSeverity(h, 154, &reboot); got != "fatal" {
		t.Errorf("Xid 154 to node reboot: %s", got)
	}
	h.Severity = map[string]string{"xid": "warn"}
	if got := XIDSeverity(h, 79, nil); got != "warn" {
		t.Errorf("xid capped at warn: 79 is %s", got)
	}
}

func TestKmsgGarbage(t *testing.T) {
	n := newNode(t)
	n.write("/dev/kmsg", "6,0,0,-;ok\nthis is not a record\n")
	_, err := ReadKmsg(n.root, "")
	if err == nil || !strings.Contains(err.Error(), "/dev/kmsg:2: ") {
		t.Errorf("garbage kmsg: %v", err)
	}
	// Continuation lines are not records.
	n.write("/dev/kmsg", "6,0,0,-;one\n SUBSYSTEM=pci\n6,1,5,-;two\n")
	k, err := ReadKmsg(n.root, "")
	if err != nil || len(k.Records) != 2 || k.Last != 1 || k.Records[1].Msg != "two" || k.Records[1].Prio != 6 {
		t.Errorf("records %+v: %v", k, err)
	}
}

// The XID watermark: an XID is new to one run only; a read-only run moves
// nothing; a fatal one stands in its GPU's history, failing every later
// prolog of that GPU (not as a new Xid) and no epilog, until the driver's
// recovery action goes back to none after it was not, or a reboot.
func TestXIDWatermark(t *testing.T) {
	n := newNode(t)
	n.appendKmsg("4,1,100,-;NVRM: Xid (PCI:0000:5d:00): 79, pid=99, name=python, GPU has fallen off the bus.")

	// --health sees it but does not consume it.
	for i := 0; i < 2; i++ {
		rep := n.run("health", true)
		if f := rep.Fatal(); len(f) != 1 || f[0].Check != "xid" || len(rep.XIDs) != 1 {
			t.Fatalf("read-only run %d: %+v", i, f)
		}
	}
	gpumock.SetFaults(n.dev(3), gpumock.Faults{RecoveryAction: int(gpu.RecoveryGPUReset)})
	rep := n.run("prolog", false)
	f := rep.Fatal()
	if len(f) != 1 || f[0].Reason != gpu3+": Xid 79 (pid=99, name=python, GPU has fallen off the bus.); driver recovery action: GPU reset" {
		t.Fatalf("first prolog: %+v", f)
	}
	if rep.Reason() != "health: XID79 reboot: "+f[0].Reason || f[0].Code != "XID79" || f[0].Action != ClassReboot {
		t.Errorf("reason %q", rep.Reason())
	}
	// The admin resumes the node: the Xid is no longer new, but it stands.
	for i := 0; i < 2; i++ {
		rep = n.run("prolog", false)
		if f := rep.Fatal(); len(rep.XIDs) != 0 || len(f) != 1 || !strings.HasPrefix(f[0].Reason, gpu3+": Xid 79 not cleared (1 time; pid=99") {
			t.Fatalf("prolog %d after: %+v", i, rep.Results)
		}
	}
	if h := rep.History["0000:5d:00.0"]; len(h) != 1 || h[0].Code != 79 || h[0].Count != 1 || h[0].Severity != "fatal" {
		t.Errorf("history %+v", rep.History)
	}
	// A new application XID only warns; the epilog judges new Xids only.
	n.appendKmsg("4,2,200,-;NVRM: Xid (PCI:0000:18:00): 13, pid=7, name=a.out, Graphics Exception")
	gpumock.SetFaults(n.dev(3), gpumock.Faults{})
	rep = n.run("epilog", false)
	if w := rep.Warnings(); len(rep.Fatal()) != 0 || len(w) != 1 || !strings.HasPrefix(w[0].Reason, "GPU 0 (0000:18:00.0): Xid 13 ") {
		t.Errorf("Xid 13: fatal %+v warn %+v", rep.Fatal(), w)
	}
	// The epilog read the action back to none: the GPU's history is clear.
	if _, ok := rep.History["0000:5d:00.0"]; ok || len(rep.Cleared) != 1 || rep.Cleared[0].By != ByDriver || len(rep.History["0000:18:00.0"]) != 1 {
		t.Errorf("history after the recovery: %+v cleared %+v", rep.History, rep.Cleared)
	}
	if rep = n.run("prolog", false); len(rep.Fatal()) != 0 {
		t.Errorf("prolog after the recovery: %+v", rep.Fatal())
	}
	// A reboot: the log starts again at sequence 0; its XIDs are new.
	n.write("/proc/sys/kernel/random/boot_id", "99999999-2222-3333-4444-555555555555\n")
	n.write("/dev/kmsg", "6,0,0,-;Linux version\n4,1,100,-;NVRM: Xid (PCI:0000:5d:00): 48, pid=1, name=x, DBE\n")
	rep = n.run("prolog", false)
	if f := rep.Fatal(); len(f) != 1 || !strings.Contains(f[0].Reason, "Xid 48") {
		t.Errorf("after reboot: %+v", f)
	}
	if len(rep.History["0000:18:00.0"]) != 0 {
		t.Errorf("history kept over a reboot: %+v", rep.History)
	}
	// Xid 48 stands no more while its row remapping reads clear.
	if rep = n.run("prolog", false); len(rep.Fatal()) != 0 {
		t.Errorf("again after reboot: %+v", rep.Fatal())
	}
}

// A kernel log that cannot be read skips the XID check, saying why.
func TestXIDNoKmsg(t *testing.T) {
	n := newNode(t)
	must(t, os.Remove(n.root.Path(KmsgPath)))
	r := one(t, n.run("prolog", false), "xid", "node")
	if r.Status != Skip || !strings.Contains(r.Reason, "cannot read the kernel log") {
		t.Errorf("%+v", r)
	}
}

// Debounce: a flapping check is fatal only at the Nth consecutive failure;
// a pass starts the count again.
func TestDebounce(t *testing.T) {
	n := newNode(t)
	n.cfg.Severity = map[string]string{"throttle": "fatal"}
	n.cfg.Debounce = map[string]int{"throttle": 3}
	gpumock.SetFaults(n.dev(3), gpumock.Faults{ThrottleReasons: gpu.ThrottleHWSlowdown})
	for i, want := range []string{"warn", "warn", "fatal", "fatal"} {
		r := one(t, n.run("prolog", false), "throttle", gpu3)
		if r.Severity != want || r.Streak != i+1 {
			t.Fatalf("run %d: %+v, want %s", i+1, r, want)
		}
		if want == "warn" && !strings.HasSuffix(r.Reason, "before it drains)") {
			t.Errorf("reason %q", r.Reason)
		}
	}
	// Read-only runs do not count.
	if r := one(t, n.run("health", true), "throttle", gpu3); r.Streak != 5 {
		t.Errorf("read-only: %+v", r)
	}
	if r := one(t, n.run("health", true), "throttle", gpu3); r.Streak != 5 {
		t.Errorf("read-only again: %+v", r)
	}
	gpumock.SetFaults(n.dev(3), gpumock.Faults{})
	if r := one(t, n.run("prolog", false), "throttle", gpu3); r.Status != OK {
		t.Fatalf("pass: %+v", r)
	}
	gpumock.SetFaults(n.dev(3), gpumock.Faults{ThrottleReasons: gpu.ThrottleHWSlowdown})
	if r := one(t, n.run("prolog", false), "throttle", gpu3); r.Severity != "warn" || r.Streak != 1 {
		t.Errorf("after a pass: %+v", r)
	}
}

// The driver's recovery action (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION) of
// each GPU in scope: anything but none fails the GPU, fatal, naming the
// action, whatever the kernel log says; a driver without the field is no
// finding; a read that fails otherwise only warns. The xid check's own
// severity caps it.
func TestRecoveryActionCheck(t *testing.T) {
	n := newNode(t)
	gpumock.SetFaults(n.dev(3), gpumock.Faults{RecoveryAction: int(gpu.RecoveryDrainAndReset)})
	gpumock.SetFaults(n.dev(5), gpumock.Faults{RecoveryUnsupported: true})
	n.dev(6).GetFieldValuesFunc = func([]nvml.FieldValue) nvml.Return { return nvml.ERROR_GPU_IS_LOST }
	rep := n.run("health", true)
	if f := rep.Fatal(); len(f) != 1 || f[0].Reason != gpu3+": driver recovery action: drain and reset" {
		t.Errorf("fatal %+v", f)
	}
	if w := rep.Warnings(); len(w) != 1 || !strings.HasPrefix(w[0].Reason, "GPU 6 (0000:ba:00.0): recovery action unreadable: ") {
		t.Errorf("warnings %+v", w)
	}
	if rep.Recovery["0000:5d:00.0"] != gpu.RecoveryDrainAndReset || rep.Recovery["0000:18:00.0"] != gpu.RecoveryNone {
		t.Errorf("recovery actions read: %v", rep.Recovery)
	}
	if _, ok := rep.Recovery["0000:ab:00.0"]; ok {
		t.Errorf("an unsupported read is in the report: %v", rep.Recovery)
	}
	n.cfg.Severity = map[string]string{"xid": "warn"}
	if rep := n.run("health", true); len(rep.Fatal()) != 0 {
		t.Errorf("xid = warn: fatal %+v", rep.Fatal())
	}
}
