package knob

import (
	"errors"
	"os"
	"strings"
	"testing"

	"gpuprep/internal/testroot"
	"gpuprep/lib/host"
	"gpuprep/lib/isolate"
	"gpuprep/lib/isolate/cgwriter"
)

func TestHousekeepingDecode(t *testing.T) {
	d, _ := Lookup("housekeeping_cpus")
	for _, tc := range []struct {
		raw  any
		want string
		err  bool
	}{
		{"3,0-2", "0-3", false},
		{"", "", false},
		{map[string]any{"cores_per_numa": int64(1)}, "cores_per_numa:1", false},
		{map[string]any{"cores_per_socket": int64(2)}, "cores_per_socket:2", false},
		{map[string]any{"cores_per_socket": int64(0)}, "cores_per_socket must be an integer 1..64", true},
		{map[string]any{"cores": int64(1)}, `unknown key "cores"`, true},
		{map[string]any{"cores_per_numa": int64(1), "cores_per_socket": int64(1)}, "must hold exactly one of cores_per_numa, cores_per_socket", true},
		{"zero", `must be a CPU list such as "0-3", {cores_per_numa = N} or {cores_per_socket = N}`, true},
		{int64(4), `must be a CPU list string or a table {cores_per_numa = N}`, true},
	} {
		got, err := d.Decode(tc.raw)
		if tc.err && (err == nil || err.Error() != tc.want) || !tc.err && (err != nil || got != tc.want) {
			t.Errorf("Decode(%v) = %q, %v; want %q (error %v)", tc.raw, got, err, tc.want, tc.err)
		}
	}
}

// The knob over a fixture root: the job's cgroup and slurmd are never
// touched, exclusions come from Env.Isolation, a unit started during the
// job is drift, and without cgroups to confine the knob is unsupported.
func TestHousekeepingKnob(t *testing.T) {
	root := knobRoot(t, "dgxh100")
	addServices(t, root)
	k := Find(Catalog(Env{Root: root, Isolation: isolate.Options{Exclude: []string{"sshd.service"}, Writer: cgwriter.Writer{}}}), ID{Name: "housekeeping_cpus", Scope: NodeScope})
	base := mustRead(t, k)
	// knobRoot leaves out the CPUs' topology: whole cores are found on
	// the shared copy.
	shared := Find(Catalog(Env{Root: host.NewRoot(testroot.Shared(t, "dgxh100"))}), k.ID())
	v := mustDesired(t, shared, "cores_per_socket:1")
	if v != "0,56,112,168" {
		t.Fatalf("Desired = %q", v)
	}
	mustApply(t, k, v)
	for cg, want := range map[string]string{
		"system.slice/cron.service": "0,56,112,168", "user.slice": "0,56,112,168", "init.scope": "0,56,112,168",
		"system.slice/sshd.service": "", "system.slice/slurmd.service": "", "system.slice/slurmstepd.scope": "",
		"system.slice/slurmstepd.scope/job_1": "4-7",
	} {
		if got := get(t, root, "/sys/fs/cgroup/"+cg+"/cpuset.cpus"); got != want {
			t.Errorf("%s = %q, want %q", cg, got, want)
		}
	}
	if got := mustRead(t, k); got != v {
		t.Errorf("Read = %q", got)
	}
	if err := os.MkdirAll(root.Path("/sys/fs/cgroup/system.slice/new.service"), 0o755); err != nil {
		t.Fatal(err)
	}
	set(t, root, "/sys/fs/cgroup/system.slice/new.service/cpuset.cpus", "")
	set(t, root, "/sys/fs/cgroup/system.slice/new.service/cgroup.controllers", "cpuset cpu")
	if got := mustRead(t, k); !strings.Contains(string(got), "system.slice/new.service=;") {
		t.Errorf("a unit started during the job: Read = %q, want it per-cgroup", got)
	}
	mustApply(t, k, base)
	if got := mustRead(t, k); got != base {
		t.Errorf("restored %q, want %q", got, base)
	}
	bare := knobRoot(t, "dgxh100")
	if _, err := Find(Catalog(Env{Root: bare}), k.ID()).Read(); !errors.Is(err, ErrUnsupported) {
		t.Errorf("no cgroup tree: Read = %v, want unsupported", err)
	}
}

// The knob as lib/plan uses it to put the services back (Def.PartWise): the
// baseline of confining services that had no cpuset of their own names
// each of them, so restoring it leaves a unit started during the job with
// its own CPUs (100-110) alone; a uniform value (an older gpuprep's
// baseline) restores only the cgroups holding the housekeeping CPUs.
func TestHousekeepingRestoresOnlyItsCgroups(t *testing.T) {
	root := knobRoot(t, "dgxh100")
	addServices(t, root)
	k := Find(Catalog(Env{Root: root, Isolation: isolate.Options{Writer: cgwriter.Writer{}}}), ID{Name: "housekeeping_cpus", Scope: NodeScope})
	d, _ := Lookup("housekeeping_cpus")
	form := d.PartWise
	if form == nil {
		t.Fatal("housekeeping_cpus is not part-wise")
	}
	restoring := func(to, held Value) (Value, bool, error) {
		named, err := form.Narrow(readParts(t, k), to, &held)
		return form.FormatEach(named), len(named) > 0, err
	}
	const hk = "0-3"
	if base := mustRead(t, k); base != "" {
		t.Fatalf("Read before = %q, want \"\"", base)
	}
	baseline, undo, err := form.Rebase(readParts(t, k), hk, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := Value("init.scope=;system.slice/cron.service=;system.slice/sshd.service=;user.slice="); baseline != want || undo != want {
		t.Errorf("Rebase = %q, undo %q; want both %q", baseline, undo, want)
	}
	mustApply(t, k, hk)
	if err := os.MkdirAll(root.Path("/sys/fs/cgroup/system.slice/backup.service"), 0o755); err != nil {
		t.Fatal(err)
	}
	set(t, root, "/sys/fs/cgroup/system.slice/backup.service/cgroup.controllers", "cpuset cpu")
	set(t, root, "/sys/fs/cgroup/system.slice/backup.service/cpuset.cpus", "100-110")
	v, write, err := restoring("", hk)
	if err != nil || !write || v != "init.scope=;system.slice/cron.service=;system.slice/sshd.service=;user.slice=" {
		t.Errorf("Restoring(\"\") = %q, %v, %v; want the confined cgroups only", v, write, err)
	}
	if v, write, _ := restoring(hk, hk); write {
		t.Errorf("Restoring the housekeeping CPUs themselves = %q, want nothing to write", v)
	}
	mustApply(t, k, baseline)
	for cg, want := range map[string]string{"system.slice/backup.service": "100-110", "system.slice/cron.service": "", "user.slice": ""} {
		if got := get(t, root, "/sys/fs/cgroup/"+cg+"/cpuset.cpus"); got != want {
			t.Errorf("after restore %s = %q, want %q", cg, got, want)
		}
	}
}
