package knob

import (
	"errors"
	"fmt"
	"gpuprep/lib/knobval"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"gpuprep/internal/testroot"
	"gpuprep/lib/host"
)

// writeTree writes files (node path -> content) under a new temporary
// root and returns it.
func writeTree(t testing.TB, files map[string]string) host.Root {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return host.NewRoot(dir)
}

// nodeSpec describes a small node for tiny trees.
type nodeSpec struct {
	cpus      int
	governors []string       // per CPU; nil: no cpufreq
	epp       []string       // per CPU; nil: no EPP
	latencies []int          // idle state latencies; nil: no cpuidle
	disabled  map[int]string // cpu -> "1010" per state, default all 0
}

// smallNode is an 8-CPU Intel-like node: intel_pstate (powersave, EPP
// balance_performance), idle states POLL/C1/C1E/C6, THP, vm and kernel
// sysctls.
func smallNode() nodeSpec {
	n := nodeSpec{cpus: 8, latencies: []int{0, 2, 4, 170}}
	for range 8 {
		n.governors = append(n.governors, "powersave")
		n.epp = append(n.epp, "balance_performance")
	}
	return n
}

func (n nodeSpec) files() map[string]string {
	f := map[string]string{
		"/sys/devices/system/cpu/online":              fmt.Sprintf("0-%d\n", n.cpus-1),
		"/sys/kernel/mm/transparent_hugepage/enabled": "always [madvise] never\n",
		"/sys/kernel/mm/transparent_hugepage/defrag":  "always defer defer+madvise [madvise] never\n",
		"/proc/sys/vm/swappiness":                     "60\n",
		"/proc/sys/vm/dirty_ratio":                    "20\n",
		"/proc/sys/vm/dirty_bytes":                    "0\n",
		"/proc/sys/vm/dirty_background_ratio":         "10\n",
		"/proc/sys/vm/dirty_background_bytes":         "0\n",
		"/proc/sys/vm/zone_reclaim_mode":              "0\n",
		"/proc/sys/kernel/numa_balancing":             "1\n",
	}
	for c := range n.cpus {
		if n.governors != nil {
			f[cpuFile(c, "cpufreq/scaling_governor")] = n.governors[c] + "\n"
			f[cpuFile(c, "cpufreq/scaling_available_governors")] = "performance powersave\n"
		}
		if n.epp != nil {
			f[cpuFile(c, "cpufreq/energy_performance_preference")] = n.epp[c] + "\n"
			f[cpuFile(c, "cpufreq/energy_performance_available_preferences")] = "default performance balance_performance balance_power power \n"
		}
		for s, lat := range n.latencies {
			d := "0"
			if m, ok := n.disabled[c]; ok {
				d = m[s : s+1]
			}
			f[cpuFile(c, fmt.Sprintf("cpuidle/state%d/latency", s))] = fmt.Sprintf("%d\n", lat)
			f[cpuFile(c, fmt.Sprintf("cpuidle/state%d/disable", s))] = d + "\n"
		}
	}
	return f
}

// kernelFS wraps a root to play kernel semantics a plain file lacks:
// after a write to a path in keep, the file holds keep's value instead (a
// kernel that kept another value); after a write to a path in side, the
// side effect runs. It counts reads.
type kernelFS struct {
	host.Root
	keep  map[string]string
	side  map[string]func(value string)
	reads *atomic.Int64
}

func newKernelFS(r host.Root) *kernelFS {
	return &kernelFS{Root: r, keep: map[string]string{}, side: map[string]func(string){}, reads: new(atomic.Int64)}
}

func (k *kernelFS) ReadString(p string) (string, error) {
	k.reads.Add(1)
	return k.Root.ReadString(p)
}

func (k *kernelFS) WriteFile(p, v string) (string, error) {
	if kept, ok := k.keep[p]; ok {
		v = kept
	}
	got, err := k.Root.WriteFile(p, v)
	if err == nil && k.side[p] != nil {
		k.side[p](v)
		got, err = k.Root.ReadString(p)
	}
	return got, err
}

// set overwrites a node file of a root.
func set(t testing.TB, r host.Root, p, content string) {
	t.Helper()
	if err := os.WriteFile(r.Path(p), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// get reads a node file of a root, trimmed.
func get(t testing.TB, r host.Root, p string) string {
	t.Helper()
	s, err := r.ReadString(p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// mustRead reads k as plans compare it: a part-wise knob's value summed
// up (Def.PartWise).
func mustRead(t testing.TB, k Knob) Value {
	t.Helper()
	v, err := k.Read()
	if err != nil {
		t.Fatalf("%s: Read: %v", k.ID(), err)
	}
	if d, _ := Lookup(k.ID().Name); d.PartWise != nil {
		if v, err = d.PartWise.Sum(v); err != nil {
			t.Fatalf("%s: Read: %v", k.ID(), err)
		}
	}
	return v
}

// readParts reads a part-wise knob part by part.
func readParts(t testing.TB, k Knob) knobval.Parts {
	t.Helper()
	d, _ := Lookup(k.ID().Name)
	v, err := k.Read()
	if err != nil {
		t.Fatalf("%s: Read: %v", k.ID(), err)
	}
	_, each, err := d.PartWise.Parse(v)
	if err != nil || each == nil {
		t.Fatalf("%s: Read = %q does not name its parts (%v)", k.ID(), v, err)
	}
	return each
}

func mustDesired(t testing.TB, k Knob, setting string) Value {
	t.Helper()
	v, err := k.Desired(setting)
	if err != nil {
		t.Fatalf("%s: Desired(%q): %v", k.ID(), setting, err)
	}
	return v
}

func mustApply(t testing.TB, k Knob, v Value) {
	t.Helper()
	if err := k.Apply(v); err != nil {
		t.Fatalf("%s: Apply(%q): %v", k.ID(), v, err)
	}
}

// roundTrip checks Read -> Desired(setting) -> Apply -> Read gives the
// desired value, and Apply(original) restores it exactly.
func roundTrip(t testing.TB, k Knob, setting string) (orig, want Value) {
	t.Helper()
	orig = mustRead(t, k)
	want = mustDesired(t, k, setting)
	mustApply(t, k, want)
	if got := mustRead(t, k); got != want {
		t.Fatalf("%s: after Apply(%q) Read = %q", k.ID(), want, got)
	}
	mustApply(t, k, orig)
	if got := mustRead(t, k); got != orig {
		t.Fatalf("%s: after restoring %q Read = %q", k.ID(), orig, got)
	}
	return orig, want
}

// wantErr checks err is non-nil and mentions every part.
func wantErr(t testing.TB, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one mentioning %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not mention %q", err, p)
		}
	}
}

func wantUnsupported(t testing.TB, err error) {
	t.Helper()
	if !errors.Is(err, ErrUnsupported) {
		t.Fatalf("error %v; want ErrUnsupported", err)
	}
}

func wantMismatch(t testing.TB, err error, want, have Value) {
	t.Helper()
	var mm *MismatchError
	if !errors.As(err, &mm) {
		t.Fatalf("error %v; want a MismatchError", err)
	}
	if mm.Want != want || mm.Have != have {
		t.Fatalf("mismatch want %q have %q; expected want %q have %q", mm.Want, mm.Have, want, have)
	}
}

// knobRoot is a writable copy of the parts of a fixture root the knobs
// touch: /sys/devices/system/cpu (without each CPU's cache and topology),
// /sys/kernel/mm and /proc/sys, symlinks kept (cpu<N>/cpufreq ->
// ../cpufreq/policy<N>). It copies from the shared unpacked root, a third
// of the files of a whole testroot.Unpack.
func knobRoot(t testing.TB, name string) host.Root {
	t.Helper()
	src := testroot.Shared(t, name)
	dst := t.TempDir()
	skip := func(rel string) bool {
		base := filepath.Base(rel)
		return strings.HasPrefix(rel, "sys/devices/system/cpu/cpu") && (base == "cache" || base == "topology")
	}
	// proc/1482, run and usr/sbin: slurmd's process and pid file
	// (internal/fixturegen), which housekeeping_cpus looks for.
	for _, top := range []string{"sys/devices/system/cpu", "sys/devices/system/node", "sys/kernel/mm", "proc/sys", "sys/fs/cgroup",
		"proc/1482", "run", "usr/sbin"} {
		err := filepath.WalkDir(filepath.Join(src, top), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) && p == filepath.Join(src, top) {
					return filepath.SkipDir
				}
				return err
			}
			rel, _ := filepath.Rel(src, p)
			to := filepath.Join(dst, rel)
			switch {
			case d.IsDir() && skip(rel):
				return filepath.SkipDir
			case d.IsDir():
				return os.MkdirAll(to, 0o755)
			case d.Type()&fs.ModeSymlink != 0:
				target, err := os.Readlink(p)
				if err != nil {
					return err
				}
				return os.Symlink(target, to)
			default:
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				return os.WriteFile(to, b, 0o644)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	r := host.NewRoot(dst)
	if name == "dgxh100" {
		addIRQs(t, r) // the captures have no /proc/irq
	}
	return r
}

// addServices adds systemd's and Slurm's cgroups to a root's cgroup v2
// tree: two services, slurmd, a job under slurmstepd.scope, user.slice and
// init.scope, none with CPUs of its own (the job's 4-7).
func addServices(t testing.TB, r host.Root) {
	t.Helper()
	files := map[string]string{}
	for _, cg := range []string{"system.slice", "system.slice/cron.service", "system.slice/sshd.service",
		"system.slice/slurmd.service", "system.slice/slurmstepd.scope", "system.slice/slurmstepd.scope/job_1",
		"user.slice", "init.scope"} {
		files["/sys/fs/cgroup/"+cg+"/cgroup.controllers"] = "cpuset cpu memory pids"
		files["/sys/fs/cgroup/"+cg+"/cpuset.cpus"] = ""
	}
	files["/sys/fs/cgroup/system.slice/slurmstepd.scope/job_1/cpuset.cpus"] = "4-7"
	for p, c := range files {
		full := r.Path(p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
