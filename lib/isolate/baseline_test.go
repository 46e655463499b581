package isolate

import (
	"strings"
	"testing"

	"gpuprep/lib/host"
	"gpuprep/lib/isolate/cgwriter"
	"gpuprep/lib/knobval"
)

// The part-wise rules live in knobval.Form (lib/plan applies them to
// housekeeping_cpus through ValueForm); these tests check them on real
// cgroup trees, through the State and string forms the cgroups take.

func Rebase(now State, to string, recorded, held *string) (string, string, error) {
	b, u, err := ValueForm.Rebase(knobval.Parts(now), knobval.Value(to), valp(recorded), valp(held))
	return string(b), string(u), err
}

func Named(now State, v string, held *string) (State, error) {
	p, err := ValueForm.Narrow(knobval.Parts(now), knobval.Value(v), valp(held))
	return State(p), err
}

func Holds(now State, v string) (bool, error) {
	return ValueForm.Holds(knobval.Parts(now), knobval.Value(v))
}

func MergeBaselines(older, newer string) (string, error) {
	v, err := ValueForm.Merge(knobval.Value(older), knobval.Value(newer))
	return string(v), err
}

func valp(s *string) *knobval.Value {
	if s == nil {
		return nil
	}
	v := knobval.Value(*s)
	return &v
}

// prologOf does what a prolog does to the housekeeping cgroups: it reads
// them, works out the baseline and the undo of confining them to to, and
// applies to.
func prologOf(t *testing.T, h *Hierarchy, to string, recorded, held *string) (baseline, undo string) {
	t.Helper()
	now, err := h.Read(Options{})
	if err != nil {
		t.Fatal(err)
	}
	baseline, undo, err = Rebase(now, to, recorded, held)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Apply(Options{Writer: cgwriter.Writer{}}, to, nil); err != nil {
		t.Fatal(err)
	}
	return baseline, undo
}

func wantCPUs(t *testing.T, r host.Root, h *Hierarchy, what string, want map[string]string) {
	t.Helper()
	for cg, w := range want {
		if got := cpusOf(t, r, h.Mount(), cg); got != w {
			t.Errorf("%s: %s = %q, want %q", what, cg, got, w)
		}
	}
}

// The case: every service had no limit of its own (a baseline that
// reads as one empty list), the prolog confines them, a service started
// during the job with its own AllowedCPUs= (8-11) is drift, and the restore
// puts back the others and leaves it at its own CPUs.
func TestRestoreLeavesUnitStartedDuringJob(t *testing.T) {
	r := v2Tree(t)
	h, _ := Open(r)
	baseline, undo := prologOf(t, h, "0-3", nil, nil)
	if !strings.Contains(baseline, "=") {
		t.Fatalf("baseline %q is not per cgroup", baseline)
	}
	if undo != baseline {
		t.Errorf("undo %q, want the baseline %q (every cgroup was written)", undo, baseline)
	}
	writeTree(t, r.Dir(), "sys/fs/cgroup", map[string]string{"system.slice/backup.service/cpuset.cpus": "8-11"})
	st, _ := h.Read(Options{})
	if got := st.Format(); !strings.Contains(got, "system.slice/backup.service=8-11") {
		t.Errorf("during the job Read = %q, want backup.service named (drift)", got)
	}
	if _, err := h.Apply(Options{Writer: cgwriter.Writer{}}, baseline, nil); err != nil {
		t.Fatal(err)
	}
	wantCPUs(t, r, h, "after restore", map[string]string{
		"system.slice/backup.service": "8-11",
		"system.slice/cron.service":   "", "system.slice/sshd.service": "", "user.slice": "", "init.scope": "",
	})
}

// A cgroup that held the housekeeping CPUs before the prolog is not
// written by it, so not named by the baseline: a restore leaves it alone
// even when it changed during the job.
func TestBaselineNamesOnlyWrittenCgroups(t *testing.T) {
	r := v2Tree(t)
	writeTree(t, r.Dir(), "sys/fs/cgroup", map[string]string{"system.slice/sshd.service/cpuset.cpus": "0-3"})
	h, _ := Open(r)
	baseline, undo := prologOf(t, h, "0-3", nil, nil)
	if strings.Contains(baseline, "sshd") || strings.Contains(undo, "sshd") {
		t.Errorf("baseline %q, undo %q name sshd.service, which held 0-3 already", baseline, undo)
	}
	writeTree(t, r.Dir(), "sys/fs/cgroup", map[string]string{"system.slice/sshd.service/cpuset.cpus": "12-15"}) // restarted with AllowedCPUs=12-15
	if _, err := h.Apply(Options{Writer: cgwriter.Writer{}}, baseline, nil); err != nil {
		t.Fatal(err)
	}
	wantCPUs(t, r, h, "after restore", map[string]string{"system.slice/sshd.service": "12-15", "system.slice/cron.service": ""})
}

// A second job's prolog, while the first holds the knob, confines a unit
// started meanwhile: the baseline gains it with its own CPUs (the others
// keep theirs), and the undo names it alone.
func TestRebaseAddsUnitsConfinedLater(t *testing.T) {
	r := v2Tree(t)
	h, _ := Open(r)
	first, _ := prologOf(t, h, "0-3", nil, nil)
	writeTree(t, r.Dir(), "sys/fs/cgroup", map[string]string{"system.slice/backup.service/cpuset.cpus": "8-11"})
	held := "0-3"
	second, undo := prologOf(t, h, "0-3", &first, &held)
	if undo != "system.slice/backup.service=8-11" {
		t.Errorf("undo = %q, want backup.service alone", undo)
	}
	if want := strings.Replace(first, "system.slice/cron.service=", "system.slice/backup.service=8-11;system.slice/cron.service=", 1); second != want {
		t.Errorf("baseline = %q, want %q", second, want)
	}
	if got := cpusOf(t, r, h.Mount(), "system.slice/backup.service"); got != "0-3" {
		t.Fatalf("backup.service not confined: %q", got)
	}
	if _, err := h.Apply(Options{Writer: cgwriter.Writer{}}, second, nil); err != nil {
		t.Fatal(err)
	}
	wantCPUs(t, r, h, "after restore", map[string]string{"system.slice/backup.service": "8-11", "system.slice/cron.service": "", "user.slice": ""})
}

// A uniform baseline (an older gpuprep's, or [defaults]) names the cgroups
// that hold the housekeeping CPUs now, and none when no job holds them or
// when it is itself the housekeeping CPUs. Rebase turns it per cgroup.
func TestNamedUniformBaseline(t *testing.T) {
	now := State{"init.scope": "0-3", "system.slice/cron.service": "0-3", "system.slice/backup.service": "8-11", "user.slice": "0-3"}
	held := "0-3"
	got, err := Named(now, "", &held)
	if err != nil {
		t.Fatal(err)
	}
	if want := "init.scope=;system.slice/cron.service=;user.slice="; got.FormatPerCgroup() != want {
		t.Errorf("Named(\"\") = %q, want %q", got.FormatPerCgroup(), want)
	}
	for _, c := range []struct {
		v    string
		held *string
	}{{"", nil}, {"0-3", &held}} {
		if got, _ := Named(now, c.v, c.held); len(got) != 0 {
			t.Errorf("Named(%q, held %v) = %v, want none", c.v, c.held != nil, got)
		}
	}
	if got, _ := Named(now, "a=1;b=", &held); got.FormatPerCgroup() != "a=1;b=" {
		t.Errorf("Named of a per-cgroup value = %q", got.FormatPerCgroup())
	}
	// A second prolog over the older gpuprep's baseline: a unit started
	// since (12-15) is added with its own CPUs.
	now["system.slice/new.service"] = "12-15"
	legacy := ""
	base, undo, err := Rebase(now, "0-3", &legacy, &held)
	if err != nil {
		t.Fatal(err)
	}
	if want := "init.scope=;system.slice/backup.service=8-11;system.slice/cron.service=;system.slice/new.service=12-15;user.slice="; base != want {
		t.Errorf("Rebase over a uniform baseline = %q, want %q", base, want)
	}
	if undo != "system.slice/backup.service=8-11;system.slice/new.service=12-15" {
		t.Errorf("undo = %q", undo)
	}
	// With no job holding the knob, nothing of gpuprep's is on the node:
	// only what the change writes.
	base, _, _ = Rebase(State{"a": "", "b": "0-3"}, "0-3", &legacy, nil)
	if base != "a=" {
		t.Errorf("Rebase with no holder = %q, want a=", base)
	}
}
