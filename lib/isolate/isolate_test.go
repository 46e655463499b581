package isolate

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"gpuprep/lib/isolate/cgwriter"
)

var jobCgroups = []string{"system.slice/slurmstepd.scope", "system.slice/slurmstepd.scope/job_1", "system.slice/slurmstepd.scope/job_1/step_0", "system.slice/slurmd.service"}

func TestTargetsV2(t *testing.T) {
	h, err := Open(v2Tree(t))
	if err != nil || !h.V2 {
		t.Fatalf("Open: %v, v2 %v", err, h != nil && h.V2)
	}
	got, err := h.Targets(Options{Exclude: []string{"munge.service"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"init.scope", "system.slice/cron.service", "system.slice/sshd.service", "user.slice"}
	if !slices.Equal(got, want) {
		t.Errorf("Targets = %q, want %q", got, want)
	}
	got, _ = h.Targets(Options{Exclude: []string{"*.scope", "s*d.service"}})
	if want := []string{"system.slice/cron.service", "system.slice/munge.service", "user.slice"}; !slices.Equal(got, want) {
		t.Errorf("Targets with patterns = %q, want %q", got, want)
	}
}

func TestApplyRestoreV2(t *testing.T) {
	r := v2Tree(t)
	h, _ := Open(r)
	before := map[string]string{}
	for _, cg := range jobCgroups {
		before[cg] = cpusOf(t, r, h.Mount(), cg)
	}
	// user.slice holding exactly its parent's CPUs (what restoring ""
	// leaves on a populated cgroup, see clearV2) reads as no limit.
	writeTree(t, r.Dir(), "sys/fs/cgroup", map[string]string{"user.slice/cpuset.cpus": "0-15"})
	st, err := h.Read(Options{})
	if err != nil || st.Format() != "" {
		t.Fatalf("Read before = %q, %v; want \"\"", st.Format(), err)
	}
	done, err := h.Apply(Options{Writer: cgwriter.Writer{}}, "0-3", nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"init.scope", "system.slice/cron.service", "system.slice/munge.service", "system.slice/sshd.service", "user.slice"}; !slices.Equal(done, want) {
		t.Errorf("Apply wrote %q, want %q", done, want)
	}
	for _, cg := range done {
		if got := cpusOf(t, r, h.Mount(), cg); got != "0-3" {
			t.Errorf("%s: cpuset.cpus = %q, want 0-3", cg, got)
		}
	}
	for _, cg := range jobCgroups {
		if got := cpusOf(t, r, h.Mount(), cg); got != before[cg] {
			t.Errorf("%s (Slurm's) changed: %q -> %q", cg, before[cg], got)
		}
	}
	if st, _ := h.Read(Options{}); st.Format() != "0-3" {
		t.Errorf("Read after = %q, want 0-3", st.Format())
	}
	if _, err := h.Apply(Options{Writer: cgwriter.Writer{}}, "", nil); err != nil {
		t.Fatal(err)
	}
	if st, _ := h.Read(Options{}); st.Format() != "" {
		t.Errorf("Read after restore = %q, want \"\"", st.Format())
	}
}

// A cgroup whose parent lacks cpuset in cgroup.subtree_control gets it
// enabled (containerd's ToggleControllers) before the write.
func TestApplyEnablesCpuset(t *testing.T) {
	r := v2Tree(t)
	h, _ := Open(r)
	writeTree(t, r.Dir(), "sys/fs/cgroup", map[string]string{
		"system.slice/cron.service/cgroup.controllers": "cpu memory",
		"system.slice/cgroup.subtree_control":          "cpu memory",
	})
	// Without the controller the cgroup has no cpuset.cpus: no limit.
	if err := os.Remove(r.Path("/sys/fs/cgroup/system.slice/cron.service/cpuset.cpus")); err != nil {
		t.Fatal(err)
	}
	if st, err := h.Read(Options{}); err != nil || st.Format() != "" {
		t.Fatalf("Read without cpuset files = %q, %v", st.Format(), err)
	}
	if _, err := h.Apply(Options{Writer: cgwriter.Writer{}}, "0-3", nil); err != nil {
		t.Fatal(err)
	}
	s, _ := r.ReadString("/sys/fs/cgroup/system.slice/cgroup.subtree_control")
	if !strings.Contains(s, "+cpuset") {
		t.Errorf("system.slice/cgroup.subtree_control = %q, want +cpuset written", s)
	}
}

func TestVanishedAndNewUnits(t *testing.T) {
	r := v2Tree(t)
	h, _ := Open(r)
	base, _ := h.Read(Options{})
	// A per-cgroup baseline (sshd had its own limit).
	writeTree(t, r.Dir(), "sys/fs/cgroup", map[string]string{"system.slice/sshd.service/cpuset.cpus": "0-15"})
	base, _ = h.Read(Options{})
	baseline := base.Format()
	if !strings.Contains(baseline, "system.slice/sshd.service=0-15") {
		t.Fatalf("baseline %q is not per-cgroup", baseline)
	}
	if _, err := h.Apply(Options{Writer: cgwriter.Writer{}}, "0-3", nil); err != nil {
		t.Fatal(err)
	}
	// During the job: sshd stops (its cgroup goes), a new service starts.
	if err := os.RemoveAll(r.Path("/sys/fs/cgroup/system.slice/sshd.service")); err != nil {
		t.Fatal(err)
	}
	if st, _ := h.Read(Options{}); st.Format() != "0-3" {
		t.Errorf("after a unit vanished: %q, want 0-3 (unchanged)", st.Format())
	}
	writeTree(t, r.Dir(), "sys/fs/cgroup", map[string]string{"system.slice/backup.service/cpuset.cpus": ""})
	st, _ := h.Read(Options{})
	if got := st.Format(); !strings.Contains(got, "system.slice/backup.service=;") || !strings.Contains(got, "system.slice/cron.service=0-3") {
		t.Errorf("after a unit started: %q, want it per-cgroup with backup.service empty (drift)", got)
	}
	// Restore the baseline: sshd is gone, which is no error, and is not
	// created again.
	if _, err := h.Apply(Options{Writer: cgwriter.Writer{}}, baseline, nil); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if r.Exists("/sys/fs/cgroup/system.slice/sshd.service") {
		t.Error("restore re-created the vanished sshd.service")
	}
	if got := cpusOf(t, r, h.Mount(), "system.slice/cron.service"); got != "" {
		t.Errorf("cron.service after restore = %q, want \"\"", got)
	}
}

func TestGarbageNamesFile(t *testing.T) {
	r := v2Tree(t)
	writeTree(t, r.Dir(), "sys/fs/cgroup", map[string]string{"system.slice/cron.service/cpuset.cpus": "zz"})
	h, _ := Open(r)
	_, err := h.Read(Options{})
	if err == nil || !strings.Contains(err.Error(), "/sys/fs/cgroup/system.slice/cron.service/cpuset.cpus") {
		t.Errorf("Read = %v, want an error naming cron.service's cpuset.cpus", err)
	}
	if _, _, err := ParseValue("a=0-3;b"); err == nil {
		t.Error("ParseValue took a malformed per-cgroup value")
	}
}

func TestNoCpuset(t *testing.T) {
	r := v2Tree(t)
	writeTree(t, r.Dir(), "sys/fs/cgroup", map[string]string{"cgroup.controllers": "cpu memory"})
	if _, err := Open(r); !errors.Is(err, ErrNoCpuset) {
		t.Errorf("Open without cpuset = %v, want ErrNoCpuset", err)
	}
}

func TestApplyRestoreV1(t *testing.T) {
	r := v1Tree(t)
	h, err := Open(r)
	if err != nil || h.V2 {
		t.Fatalf("Open: %v (want v1)", err)
	}
	got, _ := h.Targets(Options{Exclude: []string{"backup"}})
	if !slices.Equal(got, []string{".", "daemons"}) {
		t.Errorf("Targets = %q, want [. daemons]", got)
	}
	st, _ := h.Read(Options{})
	baseline := st.Format()
	if baseline != "0-15" {
		t.Fatalf("baseline %q", baseline)
	}
	if _, err := h.Apply(Options{Writer: cgwriter.Writer{}}, "0-3", nil); err != nil {
		t.Fatal(err)
	}
	for cg, want := range map[string]string{"daemons": "0-3", "backup": "0-3", "slurm": "0-15", "slurm/uid_0/job_1": "4-7", "": "0-15"} {
		if got := cpusOf(t, r, h.Mount(), cg); got != want {
			t.Errorf("%q: cpuset.cpus = %q, want %q", cg, got, want)
		}
	}
	if _, err := h.Apply(Options{Writer: cgwriter.Writer{}}, baseline, nil); err != nil {
		t.Fatal(err)
	}
	// v1 has no "inherit": "" puts back the root's CPUs.
	if _, err := h.Apply(Options{Writer: cgwriter.Writer{}}, "", nil); err != nil {
		t.Fatal(err)
	}
	if st, _ := h.Read(Options{}); st.Format() != "0-15" {
		t.Errorf("after restore: %q", st.Format())
	}
}

func TestStateFormat(t *testing.T) {
	for _, c := range []struct {
		s    State
		want string
	}{
		{State{}, ""},
		{State{"a": "0-3", "b": "0-3"}, "0-3"},
		{State{"b": "", "a": "0-3"}, "a=0-3;b="},
	} {
		if got := c.s.Format(); got != c.want {
			t.Errorf("%v.Format() = %q, want %q", c.s, got, c.want)
		}
		cpus, per, err := ParseValue(c.want)
		if err != nil {
			t.Fatal(err)
		}
		if per == nil && cpus != c.want || per != nil && per.Format() != c.want {
			t.Errorf("ParseValue(%q) does not round-trip", c.want)
		}
	}
}

// On v1 the root cpuset's host processes move into gpuprep.housekeeping:
// not kernel threads, slurmd, or an excluded command; and back.
func TestV1RootTasks(t *testing.T) {
	r := v1Tree(t)
	stat := func(pid, comm, flags string) string {
		return pid + " (" + comm + ") S 0 1 1 0 -1 " + flags + " 0 0 0 0 1 2 3 4 20 0 1 0 5 6 7"
	}
	writeTree(t, r.Dir(), "sys/fs/cgroup/cpuset", map[string]string{"cgroup.procs": "1\n2\n500\n600\n700\n800\n"})
	writeTree(t, r.Dir(), "proc", map[string]string{
		"1/stat":   stat("1", "systemd", "4194560"),
		"2/stat":   stat("2", "kthreadd", "2129984"), // PF_KTHREAD
		"500/stat": stat("500", "slurmd", "4194560"),
		"600/stat": stat("600", "sshd: a (b)", "4194560"),
		"700/stat": stat("700", "munged", "4194560"),
		// 800 has exited: no /proc/800
	})
	h, _ := Open(r)
	opt := Options{Exclude: []string{"munge*", "backup"}, Writer: cgwriter.Writer{}}
	if _, err := h.Apply(opt, "0-3", nil); err != nil {
		t.Fatal(err)
	}
	if got := cpusOf(t, r, h.Mount(), hkCgroup); got != "0-3" {
		t.Errorf("%s cpus = %q", hkCgroup, got)
	}
	if got, _ := r.ReadString("/sys/fs/cgroup/cpuset/" + hkCgroup + "/cpuset.mems"); got != "0-1" {
		t.Errorf("%s mems = %q, want the root's 0-1", hkCgroup, got)
	}
	if got, _ := r.ReadString("/sys/fs/cgroup/cpuset/" + hkCgroup + "/cgroup.procs"); got != "1\n600" {
		t.Errorf("moved %q, want 1 and 600 (not the kernel thread, slurmd, munged, the exited)", got)
	}
	if st, _ := h.Read(opt); st.Format() != "0-3" {
		t.Errorf("Read = %q", st.Format())
	}
	// Back: the processes return to the root (a fixture's folder cannot be
	// removed, so it stays with the root's CPUs and reads as the root).
	if _, err := h.Apply(opt, "0-15", nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.ReadString("/sys/fs/cgroup/cpuset/cgroup.procs"); !strings.HasSuffix(got, "800\n1\n600") {
		t.Errorf("root cgroup.procs %q, want 1 and 600 written back", got)
	}
	if st, _ := h.Read(opt); st.Format() != "0-15" {
		t.Errorf("Read after restore = %q", st.Format())
	}
}

// Without a Writer, Apply changes nothing and says why.
func TestApplyNeedsWriter(t *testing.T) {
	h, _ := Open(v2Tree(t))
	if _, err := h.Apply(Options{}, "0-3", nil); !errors.Is(err, ErrNoWriter) {
		t.Errorf("Apply without a writer: %v", err)
	}
}
