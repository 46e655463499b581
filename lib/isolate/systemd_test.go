package isolate

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/host"
	"gpuprep/lib/knobval"
)

// fakeSystemd is PID 1 over a v2 fixture tree, as systemd 252 behaves: a
// runtime AllowedCPUs= goes to a drop-in in /run/systemd/system.control and,
// a moment after the call has answered, into the unit's cpuset.cpus; an
// empty one on a cgroup with processes that had a list is refused by the
// kernel (ENOSPC, which systemd only logs), so the list stays.
type fakeSystemd struct {
	t       *testing.T
	r       host.Root
	mu      sync.Mutex
	allowed map[string]cpuset.Set // unit -> AllowedCPUs
	dropIns map[string][]string   // unit -> DropInPaths besides the runtime one
	foreign map[string]bool       // units systemd does not have
	calls   []string              // "unit=cpus" of each SetAllowedCPUs
	reloads int
	broken  error
	wg      sync.WaitGroup
}

func newFakeSystemd(t *testing.T, r host.Root) *fakeSystemd {
	return &fakeSystemd{t: t, r: r, allowed: map[string]cpuset.Set{}, dropIns: map[string][]string{}, foreign: map[string]bool{}}
}

func (f *fakeSystemd) cgroupOf(name string) string {
	var found string
	filepath.WalkDir(f.r.Path(cgroupMount), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == name {
			found = "/" + strings.TrimPrefix(p, f.r.Path(cgroupMount)+"/")
		}
		return nil
	})
	return found
}

func (f *fakeSystemd) Unit(name, cg string) (UnitInfo, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.broken != nil {
		return UnitInfo{}, false, f.broken
	}
	if f.foreign[name] || f.cgroupOf(name) != cg {
		return UnitInfo{}, false, nil
	}
	drop := slices.Clone(f.dropIns[name])
	for _, p := range runtimeDropIns(name) {
		if f.r.Exists(p) {
			drop = append(drop, p)
		}
	}
	return UnitInfo{Name: name, AllowedCPUs: f.allowed[name], DropIns: drop}, true, nil
}

func (f *fakeSystemd) SetAllowedCPUs(name string, cpus cpuset.Set) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, name+"="+cpus.String())
	f.allowed[name] = cpus
	p := f.r.Path(runtimeDropIns(name)[0])
	if err := os.MkdirAll(path.Dir(p), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(p, []byte("[Service]\nAllowedCPUs="+cpus.String()+"\n"), 0o644); err != nil {
		return err
	}
	file := f.r.Path(path.Join(cgroupMount, f.cgroupOf(name), cpusFile))
	f.wg.Add(1)
	go func() { // systemd's realize queue: after the reply
		defer f.wg.Done()
		time.Sleep(30 * time.Millisecond)
		old, _ := os.ReadFile(file)
		procs, _ := os.ReadFile(filepath.Join(filepath.Dir(file), "cgroup.procs"))
		if cpus.IsEmpty() && strings.TrimSpace(string(old)) != "" && strings.TrimSpace(string(procs)) != "" {
			return // ENOSPC
		}
		os.WriteFile(file, []byte(cpus.String()), 0o644)
	}()
	return nil
}

func (f *fakeSystemd) Reload() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reloads++
	return nil
}

// noWriter fails the test when isolation writes a cgroup directly.
type noWriter struct{ t *testing.T }

func (w noWriter) SetV2(mount, cg, cpus string) error {
	w.t.Errorf("cgroup %s written directly (%s), behind systemd's back", cg, cpus)
	return nil
}
func (w noWriter) SetV1(root, cg, cpus, mems string) error { return w.SetV2(root, cg, cpus) }

// systemdTree is v2Tree with processes in the services, an admin's runtime
// pin of cron.service to CPU 1 (set-property --runtime before any job),
// and an admin's persistent pin of sshd.service to 0-1.
func systemdTree(t *testing.T) (host.Root, *fakeSystemd) {
	r := v2Tree(t)
	sd := newFakeSystemd(t, r)
	files := map[string]string{}
	for _, cg := range []string{"system.slice/cron.service", "system.slice/munge.service", "init.scope"} {
		files[cg+"/cgroup.procs"] = "101\n"
	}
	files["system.slice/cron.service/cpuset.cpus"] = "1"
	files["system.slice/cpuset.cpus.effective"] = "0-15"
	writeTree(t, r.Dir(), "sys/fs/cgroup", files)
	sd.allowed["cron.service"] = cpuset.New(1)
	writeTree(t, r.Dir(), "run/systemd/system.control/cron.service.d", map[string]string{allowedDropIn: "[Service]\nAllowedCPUs=1\n"})
	writeTree(t, r.Dir(), "etc/systemd/system.control/sshd.service.d", map[string]string{allowedDropIn: "[Service]\nAllowedCPUs=0-1\n"})
	sd.dropIns["sshd.service"] = []string{persistentControl + "/sshd.service.d/" + allowedDropIn}
	return r, sd
}

// A prolog's confinement goes through systemd, unit by unit, never to a
// unit the admin pinned persistently, and putting the baseline back
// restores every unit's AllowedCPUs and removes only gpuprep's drop-ins.
func TestSystemdConfineAndPutBack(t *testing.T) {
	r, sd := systemdTree(t)
	opt := Options{Writer: noWriter{t}, Units: sd}
	h, _ := Open(r)
	targets, err := h.Targets(opt)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"init.scope", "system.slice/cron.service", "system.slice/munge.service", "user.slice"}
	if !slices.Equal(targets, want) {
		t.Errorf("Targets = %q, want %q (sshd.service is the admin's)", targets, want)
	}
	if k := h.Kept()["system.slice/sshd.service"]; k.CPUs != "0-1" || !strings.HasPrefix(k.File, persistentControl) {
		t.Errorf("Kept = %+v, want sshd.service with 0-1 from %s", h.Kept(), persistentControl)
	}
	before, err := h.Read(opt)
	if err != nil {
		t.Fatal(err)
	}
	baseline := before.FormatPerCgroup()

	done, err := h.Apply(opt, "0,8", nil)
	if err != nil {
		t.Fatal(err)
	}
	sd.wg.Wait()
	if !slices.Equal(done, want) {
		t.Errorf("Apply set %q, want %q", done, want)
	}
	for _, cg := range want {
		if got := cpusOf(t, r, h.Mount(), cg); got != "0,8" {
			t.Errorf("%s: cpuset.cpus = %q, want 0,8", cg, got)
		}
	}
	for _, u := range []string{"init.scope", "munge.service", "user.slice"} {
		if !h.marked(u) {
			t.Errorf("%s: no mark, though its runtime drop-in is gpuprep's", u)
		}
	}
	if h.marked("cron.service") {
		t.Error("cron.service marked: its runtime drop-in is the admin's")
	}

	// The epilog: a fresh hierarchy puts the per-cgroup baseline back.
	sd.calls = nil
	h2, _ := Open(r)
	if _, err := h2.Apply(opt, baseline, nil); err != nil {
		t.Fatal(err)
	}
	sd.wg.Wait()
	wantCalls := []string{"init.scope=0-15", "init.scope=", "cron.service=1", "munge.service=0-15", "munge.service=", "user.slice=0-15", "user.slice="}
	if !slices.Equal(sd.calls, wantCalls) {
		t.Errorf("put back called %q, want %q (full list first where the kernel keeps a mask)", sd.calls, wantCalls)
	}
	after, err := h2.Read(opt)
	if err != nil || after.FormatPerCgroup() != baseline {
		t.Errorf("after put back = %q (%v), want the baseline %q", after.FormatPerCgroup(), err, baseline)
	}
	for _, u := range []string{"init.scope", "munge.service", "user.slice"} {
		if r.Exists(runtimeDropIns(u)[0]) || h2.marked(u) {
			t.Errorf("%s: gpuprep's runtime drop-in or mark left behind", u)
		}
	}
	if !r.Exists(runtimeDropIns("cron.service")[0]) {
		t.Error("the admin's runtime drop-in of cron.service was removed")
	}
	if !r.Exists(persistentControl + "/sshd.service.d/" + allowedDropIn) {
		t.Error("the admin's persistent drop-in of sshd.service was removed")
	}
	if sd.reloads != 1 {
		t.Errorf("daemon-reload %d times after removing drop-ins, want 1", sd.reloads)
	}
}

// A unit that stopped during the job still loses gpuprep's drop-in, so
// that it does not start confined after the job.
func TestSystemdPutBackVanishedUnit(t *testing.T) {
	r, sd := systemdTree(t)
	opt := Options{Writer: noWriter{t}, Units: sd}
	h, _ := Open(r)
	if _, err := h.Apply(opt, "0", nil); err != nil {
		t.Fatal(err)
	}
	sd.wg.Wait()
	if err := os.RemoveAll(r.Path("sys/fs/cgroup/system.slice/munge.service")); err != nil {
		t.Fatal(err)
	}
	h2, _ := Open(r)
	if _, err := h2.Apply(opt, "system.slice/munge.service=;user.slice=", nil); err != nil {
		t.Fatal(err)
	}
	sd.wg.Wait()
	if r.Exists(runtimeDropIns("munge.service")[0]) {
		t.Error("the stopped unit keeps gpuprep's drop-in: it would start confined")
	}
}

// A cgroup systemd has no unit for (made behind its back, or inside a
// delegated unit) is written directly.
func TestSystemdForeignCgroupWrittenDirectly(t *testing.T) {
	r, sd := systemdTree(t)
	sd.foreign["munge.service"] = true
	var direct []string
	w := recWriter{&direct}
	h, _ := Open(r)
	if _, err := h.Apply(Options{Writer: w, Units: sd}, "0", nil); err != nil {
		t.Fatal(err)
	}
	sd.wg.Wait()
	if !slices.Equal(direct, []string{"system.slice/munge.service"}) {
		t.Errorf("written directly: %q, want only munge.service", direct)
	}
}

type recWriter struct{ cgs *[]string }

func (w recWriter) SetV2(mount, cg, cpus string) error {
	*w.cgs = append(*w.cgs, cg)
	return os.WriteFile(filepath.Join(mount, cg, cpusFile), []byte(cpus), 0o644)
}
func (w recWriter) SetV1(root, cg, cpus, mems string) error { return nil }

// systemd not answering skips isolation (unsupported), never falling back
// to writes a daemon-reload would undo.
func TestSystemdNotAnswering(t *testing.T) {
	r, sd := systemdTree(t)
	sd.broken = errors.New("connection refused")
	h, _ := Open(r)
	_, err := h.Targets(Options{Units: sd})
	if !errors.Is(err, ErrSystemd) || !errors.Is(err, knobval.ErrUnsupported) {
		t.Errorf("Targets error = %v, want ErrSystemd (unsupported)", err)
	}
}

func TestOutranking(t *testing.T) {
	files := map[string]string{
		"/etc/systemd/system.control/a.service.d/50-AllowedCPUs.conf": "[Service]\nAllowedCPUs=2\n",
		"/run/systemd/system.control/a.service.d/50-AllowedCPUs.conf": "[Service]\nAllowedCPUs=0\n",
		"/etc/systemd/system/b.service.d/override.conf":               "[Service]\nNice=5\nAllowedCPUs = 3-4\n",
		"/etc/systemd/system/b.service.d/10-early.conf":               "[Service]\nAllowedCPUs=7\n",
		"/usr/lib/systemd/system/c.service.d/zz-cpus.conf":            "[Service]\nNice=1\n",
		"/etc/systemd/system/d.service.d/override.conf":               "[Service]\nAllowedCPUs=1\nAllowedCPUs=\n",
	}
	read := func(p string) (string, error) {
		if s, ok := files[p]; ok {
			return s, nil
		}
		return "", os.ErrNotExist
	}
	for _, tc := range []struct {
		dropIns    []string
		file, cpus string
	}{
		{[]string{"/run/systemd/system.control/a.service.d/50-AllowedCPUs.conf"}, "", ""},
		{[]string{"/etc/systemd/system.control/a.service.d/50-AllowedCPUs.conf"}, "/etc/systemd/system.control/a.service.d/50-AllowedCPUs.conf", "2"},
		{[]string{"/etc/systemd/system/b.service.d/10-early.conf"}, "", ""},
		{[]string{"/etc/systemd/system/b.service.d/override.conf", "/etc/systemd/system/b.service.d/10-early.conf"}, "/etc/systemd/system/b.service.d/override.conf", "3-4"},
		{[]string{"/usr/lib/systemd/system/c.service.d/zz-cpus.conf"}, "", ""},
		{[]string{"/etc/systemd/system/d.service.d/override.conf"}, "/etc/systemd/system/d.service.d/override.conf", ""},
		{[]string{"/etc/systemd/system/e.service.d/zz-gone.conf"}, "", ""},
	} {
		file, cpus := Outranking(tc.dropIns, read)
		if file != tc.file || cpus != tc.cpus {
			t.Errorf("Outranking(%q) = %q %q, want %q %q", tc.dropIns, file, cpus, tc.file, tc.cpus)
		}
	}
}

// An admin's explicit AllowedCPUs= of every CPU is put back as it was, not
// as "none of its own" (which the kernel shows the same way).
func TestSystemdExplicitFullListKept(t *testing.T) {
	r, sd := systemdTree(t)
	writeTree(t, r.Dir(), "sys/fs/cgroup", map[string]string{"system.slice/munge.service/cpuset.cpus": "0-15"})
	sd.allowed["munge.service"], _ = cpuset.Parse("0-15")
	opt := Options{Writer: noWriter{t}, Units: sd}
	h, _ := Open(r)
	st, err := h.Read(opt)
	if err != nil {
		t.Fatal(err)
	}
	if got := st["system.slice/munge.service"]; got != "0-15" {
		t.Errorf("munge.service reads %q, want its AllowedCPUs 0-15", got)
	}
	// Written behind systemd's back: the kernel's value, so drift shows.
	writeTree(t, r.Dir(), "sys/fs/cgroup", map[string]string{"system.slice/munge.service/cpuset.cpus": "3"})
	h2, _ := Open(r)
	if st, _ := h2.Read(opt); st["system.slice/munge.service"] != "3" {
		t.Errorf("munge.service reads %q, want the kernel's 3", st["system.slice/munge.service"])
	}
}
