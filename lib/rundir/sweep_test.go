package rundir

import (
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"gpuprep/internal/testroot"
)

// deadPID is a pid no process has: past the kernel's pid_max.
const deadPID = 1 << 23

// Sweep removes the temporary files of killed writes in the run directory
// and its subdirectories of root's; a live process's file, other files,
// and anything in a directory another user owns (an MPS daemon's) stay.
func TestSweepRemovesKilledWrites(t *testing.T) {
	testroot.NeedRoot(t, "chown")
	r := newRoot(t)
	d := mustOpen(t, r, Options{})
	for _, sub := range []string{"jobs", "units", "mps", "mps/alice-0"} {
		if err := os.Mkdir(r.Path(Path+"/"+sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chown(r.Path(Path+"/mps/alice-0"), 65534, 65534)
	files := map[string]bool{ // name: must stay
		".node-description.tmp-" + strconv.Itoa(deadPID): false,
		"jobs/.17.tmp-" + strconv.Itoa(deadPID):          false,
		"units/.a.service.tmp-" + strconv.Itoa(deadPID):  false,
		"jobs/.18.tmp-" + strconv.Itoa(os.Getpid()):      true,
		"jobs/17":          true,
		"node-description": true,
		"mps/alice-0/.log.tmp-" + strconv.Itoa(deadPID): true,
	}
	for name := range files {
		if err := os.WriteFile(r.Path(Path+"/"+name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := d.Sweep()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for name, stays := range files {
		if !stays {
			want = append(want, name)
		}
	}
	sort.Strings(want)
	sort.Strings(removed)
	if strings.Join(removed, " ") != strings.Join(want, " ") {
		t.Errorf("removed %q, want %q", removed, want)
	}
	for name, stays := range files {
		if _, err := os.Lstat(r.Path(Path + "/" + name)); (err == nil) != stays {
			t.Errorf("%s: stays %v, want %v", name, err == nil, stays)
		}
	}
	ro, err := OpenReadOnly(r, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.Sweep(); err == nil {
		t.Error("a read-only view swept")
	}
}
