package isolate

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"gpuprep/lib/cpuset"
)

// snapshot records every file, folder and link under dir: its mode and
// content (a link's target), so that a test can tell nothing changed.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		val := st.Mode().String()
		switch {
		case st.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			val += " -> " + target
		case st.Mode().IsRegular():
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

// A node without systemd: Look says cgroup v2, cpuset.cpus written
// directly, no unit kept, and changes nothing.
func TestLookCgroupfs(t *testing.T) {
	r := v2Tree(t)
	before := snapshot(t, r.Dir())
	v, err := Look(r, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !v.V2 || v.Systemd || len(v.Kept) != 0 {
		t.Errorf("view %+v, want v2, cgroupfs, nothing kept", v)
	}
	if after := snapshot(t, r.Dir()); !maps.Equal(before, after) {
		t.Error("Look changed the fixture root")
	}
}

// With systemd: Look says systemd, lists the unit whose AllowedCPUs= the
// admin set persistently (sshd.service) and a drop-in that sorts after
// the runtime one (munge.service's override.conf) as kept, never the one
// with a runtime pin of its own (cron.service, which the hooks confine),
// sets no property, reloads nothing and changes no file.
func TestLookSystemdKept(t *testing.T) {
	r, sd := systemdTree(t)
	writeTree(t, r.Dir(), "etc/systemd/system/munge.service.d", map[string]string{"override.conf": "[Service]\nAllowedCPUs=2-3\n"})
	sd.dropIns["munge.service"] = []string{"/etc/systemd/system/munge.service.d/override.conf"}
	before := snapshot(t, r.Dir())
	v, err := Look(r, Options{Units: sd, Writer: noWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	want := []Kept{
		{Unit: "munge.service", File: "/etc/systemd/system/munge.service.d/override.conf", CPUs: "2-3"},
		{Unit: "sshd.service", File: persistentControl + "/sshd.service.d/" + allowedDropIn, CPUs: "0-1"},
	}
	if !v.V2 || !v.Systemd || !slices.Equal(v.Kept, want) {
		t.Errorf("view %+v, want v2, systemd, kept %v", v, want)
	}
	sd.wg.Wait()
	if len(sd.calls) != 0 || sd.reloads != 0 {
		t.Errorf("Look called systemd: set %v, %d reloads", sd.calls, sd.reloads)
	}
	if after := snapshot(t, r.Dir()); !maps.Equal(before, after) {
		t.Error("Look changed the fixture root")
	}
}

// cgroup v1: systemd does not manage cpuset, so cpuset.cpus is written
// directly whether or not systemd runs.
func TestLookV1(t *testing.T) {
	r := v1Tree(t)
	v, err := Look(r, Options{Units: newFakeSystemd(t, r)})
	if err != nil || v.V2 || v.Systemd || len(v.Kept) != 0 {
		t.Errorf("view %+v, %v; want v1, cgroupfs, nothing kept", v, err)
	}
}

// The units Look hands Targets refuse a set and a reload.
func TestLookUnitsReadOnly(t *testing.T) {
	_, sd := systemdTree(t)
	u := readOnlyUnits{sd}
	if u.SetAllowedCPUs("cron.service", cpuset.New(0)) == nil || u.Reload() == nil || len(sd.calls) != 0 || sd.reloads != 0 {
		t.Errorf("read-only units: set %v, %d reloads", sd.calls, sd.reloads)
	}
}
