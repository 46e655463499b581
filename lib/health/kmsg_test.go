package health

import (
	"errors"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"gpuprep/lib/gpu"
)

// A record keeps its priority: facility 0 is the kernel's, anything else
// was written to /dev/kmsg from user space.
func TestKmsgFacility(t *testing.T) {
	n := newNode(t)
	n.write(KmsgPath, "4,0,0,-;NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=a, x\n12,1,5,-;NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=a, x\n190,2,6,c;local7\n")
	k, err := ReadKmsg(n.root, "")
	if err != nil || len(k.Records) != 3 {
		t.Fatalf("%+v: %v", k, err)
	}
	for i, want := range []struct {
		fac    uint64
		kernel bool
	}{{0, true}, {1, false}, {23, false}} {
		if r := k.Records[i]; r.Facility() != want.fac || r.FromKernel() != want.kernel {
			t.Errorf("record %d (PRIO %d): facility %d, from kernel %v", i, r.Prio, r.Facility(), r.FromKernel())
		}
	}
	n.write(KmsgPath, "x4,0,0,-;one\n")
	if _, err := ReadKmsg(n.root, ""); err == nil || !strings.Contains(err.Error(), "/dev/kmsg:1: ") || !strings.Contains(err.Error(), "priority") {
		t.Errorf("bad priority: %v", err)
	}
}

// A jump in sequence numbers between two records read is records lost
// (what an EPIPE read leaves); a number that does not grow is an error.
func TestKmsgFileGaps(t *testing.T) {
	n := newNode(t)
	n.write(KmsgPath, "6,10,0,-;a\n6,11,1,-;NVRM: b\n6,15,2,-;c\n6,16,3,-;NVRM: d\n6,18,4,-;e\n")
	k, err := ReadKmsg(n.root, "NVRM")
	want := []Gap{{From: 12, To: 15}, {From: 17, To: 18}}
	if err != nil || k.N != 5 || k.First != 10 || k.Last != 18 || len(k.Records) != 2 || !reflect.DeepEqual(k.Lost, want) {
		t.Fatalf("%+v: %v", k, err)
	}
	if s := k.Lost[0].String() + " " + k.Lost[1].String() + " " + (Gap{From: 3}).String(); s != "12-14 17 3 on" {
		t.Errorf("gaps as text: %q", s)
	}
	n.write(KmsgPath, "6,10,0,-;a\n6,10,1,-;b\n")
	if _, err := ReadKmsg(n.root, ""); err == nil || !strings.Contains(err.Error(), "/dev/kmsg:2: record 10 after record 10") {
		t.Errorf("repeated sequence number: %v", err)
	}
}

// The character device: EPIPE (records overwritten under the reader) is a
// gap up to the record read next, or of unknown end when none follows;
// EINTR is retried; EAGAIN ends the read.
func TestKmsgDeviceEPIPE(t *testing.T) {
	type step struct {
		rec string
		err error
	}
	reader := func(steps ...step) func([]byte) (int, error) {
		return func(b []byte) (int, error) {
			if len(steps) == 0 {
				return 0, syscall.EAGAIN
			}
			s := steps[0]
			steps = steps[1:]
			return copy(b, s.rec), s.err
		}
	}
	rec := func(s string) step { return step{rec: s} }
	epipe, eintr := step{err: syscall.EPIPE}, step{err: syscall.EINTR}

	k, err := readKmsgDevice(reader(rec("6,5,0,-;a\n"), rec("6,6,0,-;NVRM: b\n"), epipe, rec("6,10,0,-;c\n"), eintr, rec("6,11,0,-;NVRM: d\n")), "NVRM")
	if err != nil || k.First != 5 || k.Last != 11 || k.N != 4 || len(k.Records) != 2 || !reflect.DeepEqual(k.Lost, []Gap{{From: 7, To: 10}}) {
		t.Errorf("EPIPE then records: %+v: %v", k, err)
	}
	k, err = readKmsgDevice(reader(rec("6,5,0,-;a\n"), epipe), "")
	if err != nil || !reflect.DeepEqual(k.Lost, []Gap{{From: 6}}) {
		t.Errorf("EPIPE at the end: %+v: %v", k, err)
	}
	_, err = readKmsgDevice(reader(rec("6,5,0,-;a\n"), step{err: syscall.EIO}), "")
	if !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "read /dev/kmsg") {
		t.Errorf("EIO: %v", err)
	}
}

// Advance: records from the watermark to the first one read, and the
// read's own gaps at or above the watermark, are lost; the new Xids go
// into their GPU's history, one record per code.
func TestAdvanceLost(t *testing.T) {
	const bus = "0000:18:00.0"
	xid := kern(0, "NVRM: Xid (PCI:0000:18:00): 13, pid=7, name=a.out, Graphics Exception")
	at := func(r Record, seq uint64) Record { r.Seq = seq; return r }
	log := func(first uint64, recs []Record, lost ...Gap) KernelLog {
		k := KernelLog{N: 1, First: first, Last: first, Lost: lost}
		for _, r := range recs {
			k.Records = append(k.Records, r)
			k.Last = max(k.Last, r.Seq)
		}
		return k
	}
	st := &State{}
	fresh, lost := st.Advance(bootA, log(0, []Record{at(xid, 3)}))
	if len(fresh) != 1 || len(lost) != 0 || st.Next != 4 || len(st.History[bus]) != 1 {
		t.Fatalf("first run: %+v %+v %+v", fresh, lost, st)
	}
	// The ring buffer dropped 4-9 before this run: unknown.
	fresh, lost = st.Advance(bootA, log(10, []Record{at(kern(0, "x"), 12)}))
	if len(fresh) != 0 || !reflect.DeepEqual(lost, []Gap{{From: 4, To: 10}}) || st.Next != 13 {
		t.Fatalf("gap between runs: %+v %+v %+v", fresh, lost, st)
	}
	// Gaps of the read: one below the watermark was seen before (none),
	// one across it is cut at it, one above it is kept.
	_, lost = st.Advance(bootA, log(5, []Record{at(xid, 20), at(xid, 25)}, Gap{From: 6, To: 9}, Gap{From: 11, To: 15}, Gap{From: 21, To: 23}))
	if !reflect.DeepEqual(lost, []Gap{{From: 13, To: 15}, {From: 21, To: 23}}) {
		t.Fatalf("gaps of the read: %+v %+v", lost, st)
	}
	if h := st.History[bus]; len(h) != 1 || h[0].Count != 3 || h[0].FirstSeq != 3 || h[0].LastSeq != 25 {
		t.Errorf("one record per code: %+v", h)
	}
	if n := lostCount(lost); n != 4 {
		t.Errorf("lost %d records, want 4", n)
	}
	if n := lostCount([]Gap{{From: 3}}); n != 1 {
		t.Errorf("a gap of unknown end counts %d, want 1", n)
	}
	// A new boot starts at 0: a log that starts there lost nothing; one
	// that starts later lost its beginning.
	if _, lost = st.Advance("boot-b", log(0, nil)); len(lost) != 0 || len(st.History) != 0 {
		t.Errorf("new boot: %+v %+v", lost, st.History)
	}
	if _, lost = st.Advance("boot-c", log(7, nil)); !reflect.DeepEqual(lost, []Gap{{From: 0, To: 7}}) {
		t.Errorf("new boot, log wrapped: %+v", lost)
	}
}

// Observe: a GPU's recovery action back to none after it was not clears
// the records earlier runs read (not this run's); none all along clears
// nothing; a run that lost records clears nothing and keeps the not-none
// action, so the next complete run clears.
func TestObserve(t *testing.T) {
	const a, b = "0000:18:00.0", "0000:2a:00.0"
	now := time.Unix(1700000000, 0)
	st := &State{BootID: bootA, Next: 10, History: map[string]GPUHistory{
		a: {{Code: 74, Count: 1, LastSeq: 3}, {Code: 79, Count: 2, LastSeq: 12}},
		b: {{Code: 79, Count: 1, LastSeq: 4}},
	}}
	reset, none := gpu.RecoveryGPUReset, gpu.RecoveryNone
	if c := st.Observe(map[string]gpu.RecoveryAction{a: reset, b: none}, 10, true, now); len(c) != 0 {
		t.Fatalf("first read: %+v", c)
	}
	if c := st.Observe(map[string]gpu.RecoveryAction{a: none, b: none}, 10, false, now); len(c) != 0 || st.Recovery[a] != reset {
		t.Fatalf("records lost: cleared %+v, recorded %v", c, st.Recovery)
	}
	c := st.Observe(map[string]gpu.RecoveryAction{a: none, b: none}, 10, true, now)
	if len(c) != 1 || c[0].BusID != a || c[0].By != ByDriver || !reflect.DeepEqual(c[0].Codes, []int{74}) || !strings.Contains(c[0].Reason, "was GPU reset") {
		t.Fatalf("back to none: %+v", c)
	}
	if h := st.History[a]; len(h) != 1 || h[0].Code != 79 || len(st.History[b]) != 1 || len(st.Clears) != 1 {
		t.Errorf("after: %+v clears %+v", st.History, st.Clears)
	}
	if c := st.ClearAdmin(nil, "alice", "reseated", now); len(c) != 2 || c[0].By != "alice" || len(st.History) != 0 || len(st.Clears) != 3 {
		t.Errorf("admin clear of all: %+v, left %+v", c, st.History)
	}
}
