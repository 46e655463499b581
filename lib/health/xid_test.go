package health

import (
	"os"
	"strings"
	"testing"

	"gpuprep/internal/gpumock"
	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
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
		if !ok || x.Code != tc.code || x.BusID != tc.bus || x.MIG != tc.mig || x.Seq != 7 || x.Text != clip(tc.text) {
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

// GPU reset lines: the driver's own, anchored, of the kernel facility.
func TestParseReset(t *testing.T) {
	for msg, want := range map[string]string{
		"NVRM: GPU 0000:18:00.0: GPU reset completed":           "0000:18:00.0",
		"NVRM: GPU at PCI:0000:5D:00: GPU recovered from error": "0000:5d:00.0",
	} {
		if bus, ok := ParseReset(kern(1, msg)); !ok || bus != want {
			t.Errorf("%q: %q %v", msg, bus, ok)
		}
	}
	for _, rec := range []Record{
		// Xid 63's text mentions a reset: it is not one.
		kern(1, "NVRM: Xid (PCI:0000:18:00): 63, Row Remapper: New row marked for remapping, reset gpu to activate."),
		kern(2, "NVRM: Xid (PCI:0000:18:00): 13, pid=7, name=NVRM: GPU 0000:18:00.0: GPU reset, Graphics Exception"),
		kern(3, "tmpfs: Unknown parameter 'NVRM: GPU 0000:18:00.0: GPU reset completed'"),
		{Prio: 14, Seq: 4, Msg: "NVRM: GPU 0000:18:00.0: GPU reset completed"},
		kern(5, "NVRM: GPU at PCI:0000:18:00: GPU-5d9b7a4e-3c8d-2f1e-9a0b-6c7d8e9f0a1b"),
	} {
		if bus, ok := ParseReset(rec); ok {
			t.Errorf("%+v read as a reset of %s", rec, bus)
		}
	}
}

func TestXIDSeverity(t *testing.T) {
	h := config.Default().Health
	for code, want := range map[int]string{79: "fatal", 48: "fatal", 13: "warn", 43: "warn", 999: "warn"} {
		if got := XIDSeverity(h, code); got != want {
			t.Errorf("Xid %d: %s, want %s", code, got, want)
		}
	}
	h.Severity = map[string]string{"xid": "warn"}
	if got := XIDSeverity(h, 79); got != "warn" {
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

// The XID watermark: an XID drains once; later runs of the same boot never
// count it again; a new boot starts from 0; a read-only run moves nothing.
func TestXIDWatermark(t *testing.T) {
	n := newNode(t)
	n.appendKmsg("4,1,100,-;NVRM: Xid (PCI:0000:5d:00): 79, pid=99, name=python, GPU has fallen off the bus.")

	// --health sees it but does not consume it.
	for i := 0; i < 2; i++ {
		rep := n.run("health", true)
		if f := rep.Fatal(); len(f) != 1 || f[0].Check != "xid" {
			t.Fatalf("read-only run %d: %+v", i, f)
		}
	}
	rep := n.run("prolog", false)
	f := rep.Fatal()
	if len(f) != 1 || f[0].Reason != gpu3+": Xid 79 (pid=99, name=python, GPU has fallen off the bus.)" {
		t.Fatalf("first prolog: %+v", f)
	}
	if rep.Reason() != "health: "+f[0].Reason {
		t.Errorf("reason %q", rep.Reason())
	}
	// The admin resumes the node: the same XID never drains it again.
	for i := 0; i < 2; i++ {
		rep = n.run("prolog", false)
		if len(rep.Fatal()) != 0 || one(t, rep, "xid", "node").Value != "no new XIDs" {
			t.Fatalf("prolog %d after: %+v", i, rep.Results)
		}
	}
	if h := rep.History["0000:5d:00.0"]; len(h) != 1 || h[0].Code != 79 {
		t.Errorf("history %+v", rep.History)
	}
	// A new application XID only warns.
	n.appendKmsg("4,2,200,-;NVRM: Xid (PCI:0000:18:00): 13, pid=7, name=a.out, Graphics Exception")
	rep = n.run("epilog", false)
	if w := rep.Warnings(); len(rep.Fatal()) != 0 || len(w) != 1 || !strings.HasPrefix(w[0].Reason, "GPU 0 (0000:18:00.0): Xid 13 ") {
		t.Errorf("Xid 13: fatal %+v warn %+v", rep.Fatal(), w)
	}
	// A GPU reset clears the GPU's history.
	n.appendKmsg("6,3,300,-;NVRM: GPU 0000:5d:00.0: GPU reset completed")
	rep = n.run("prolog", false)
	if _, ok := rep.History["0000:5d:00.0"]; ok || len(rep.History["0000:18:00.0"]) != 1 {
		t.Errorf("history after reset: %+v", rep.History)
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
