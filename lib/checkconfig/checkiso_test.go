package checkconfig

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpuprep/internal/fakeproc"
	"gpuprep/internal/testroot"
	"gpuprep/lib/config"
	"gpuprep/lib/cpuset"
	"gpuprep/lib/host"
	"gpuprep/lib/isolate"
)

// isoRoot is a cgroup v2 node without systemd: slurmd in
// system.slice/slurmd.service, cron and sshd beside it; sshd has an
// admin's persistent AllowedCPUs= drop-in (systemctl set-property without
// --runtime).
func isoRoot(t *testing.T) string {
	files := map[string]string{
		"sys/fs/cgroup/cgroup.controllers":                              "cpuset cpu memory pids",
		"sys/fs/cgroup/cgroup.subtree_control":                          "cpuset cpu memory pids",
		"sys/fs/cgroup/cpuset.cpus.effective":                           "0-15",
		"run/slurmd.pid":                                                "812\n",
		"etc/systemd/system.control/sshd.service.d/50-AllowedCPUs.conf": "[Service]\nAllowedCPUs=0-1\n",
	}
	for _, cg := range []string{"system.slice", "system.slice/cron.service", "system.slice/sshd.service", "system.slice/slurmd.service", "user.slice", "init.scope"} {
		files["sys/fs/cgroup/"+cg+"/cpuset.cpus"] = ""
		files["sys/fs/cgroup/"+cg+"/cgroup.procs"] = ""
	}
	dir := testroot.Files(t, files)
	fakeproc.Add(t, dir, 812, 0, "usr/sbin/slurmd", "/usr/sbin/slurmd --systemd", "0::/system.slice/slurmd.service\n")
	return dir
}

// snapshot records every file, folder and link under dir with its mode and
// content (a link's target).
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		val := st.Mode().String()
		if st.Mode()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			val += " -> " + target
		} else if st.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			val += " " + string(b)
		}
		out[p] = val
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// fakeUnits is systemd with a unit per cgroup of units (by ControlGroup);
// a set or a reload is counted, and fails the test.
type fakeUnits struct {
	units   map[string]isolate.UnitInfo
	changes int
}

func (f *fakeUnits) Unit(name, cg string) (isolate.UnitInfo, bool, error) {
	u, ok := f.units[cg]
	return u, ok && u.Name == name, nil
}
func (f *fakeUnits) SetAllowedCPUs(string, cpuset.Set) error { f.changes++; return nil }
func (f *fakeUnits) Reload() error                           { f.changes++; return nil }

// A node without systemd: --check-config says the hooks write cpuset.cpus
// directly and why, keeps no unit, and changes nothing on the node.
func TestCheckIsolationCgroupfs(t *testing.T) {
	dir := isoRoot(t)
	before := snapshot(t, dir)
	var out strings.Builder
	checkIsolation(host.NewRoot(dir), config.Default(), func(string) string { return "" }, "node1", &out)
	want := "isolation: cgroup v2: housekeeping_cpus writes each service's cpuset.cpus directly (cgroupfs): systemd is not PID 1 (no /run/systemd/system)\n"
	if out.String() != want {
		t.Errorf("got %q\nwant %q", out.String(), want)
	}
	if !maps.Equal(before, snapshot(t, dir)) {
		t.Error("--check-config changed the node")
	}
}

// With systemd (a fake): --check-config says the hooks go through systemd,
// lists sshd.service, whose AllowedCPUs= the admin set persistently, as
// kept with its drop-in and CPUs, sets no unit property and changes nothing.
func TestCheckIsolationSystemdKept(t *testing.T) {
	dir := isoRoot(t)
	dropIn := "/etc/systemd/system.control/sshd.service.d/50-AllowedCPUs.conf"
	sd := &fakeUnits{units: map[string]isolate.UnitInfo{
		"/system.slice/cron.service":   {Name: "cron.service"},
		"/system.slice/sshd.service":   {Name: "sshd.service", AllowedCPUs: cpuset.New(0, 1), DropIns: []string{dropIn}},
		"/system.slice/slurmd.service": {Name: "slurmd.service"},
		"/init.scope":                  {Name: "init.scope"},
		"/user.slice":                  {Name: "user.slice"},
	}}
	before := snapshot(t, dir)
	var out strings.Builder
	reportIsolation(&out, host.NewRoot(dir), isolate.Options{Units: sd}, "systemd is PID 1")
	for _, want := range []string{
		"isolation: cgroup v2: housekeeping_cpus sets the runtime AllowedCPUs= of systemd's units over D-Bus (a cgroup of no unit: its cpuset.cpus directly): systemd is PID 1\n",
		"isolation: keeps sshd.service as the admin set it: AllowedCPUs=0-1 in " + dropIn + "\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "keeps cron.service") || sd.changes != 0 {
		t.Errorf("cron.service kept, or %d changes through systemd:\n%s", sd.changes, out.String())
	}
	if !maps.Equal(before, snapshot(t, dir)) {
		t.Error("--check-config changed the node")
	}
}

// systemd is PID 1 but D-Bus does not answer: the hooks' calls fail as
// --check-config's, so it says they confine nothing (cgroup v2).
func TestCheckIsolationUnreachable(t *testing.T) {
	dir := isoRoot(t)
	var out strings.Builder
	reportIsolation(&out, host.NewRoot(dir), isolate.Options{Units: unreachable{errors.New("dial unix /run/systemd/private: connection refused")}},
		"systemd is PID 1 (/run/systemd/system), but D-Bus not reachable: dial unix /run/systemd/private: connection refused")
	if !strings.Contains(out.String(), "D-Bus not reachable: dial unix") || !strings.Contains(out.String(), "isolation: the hooks confine no cgroup here: systemd owns the cgroups but did not answer") {
		t.Errorf("got\n%s", out.String())
	}
}
