package isolate

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// slurmdPID is slurmd's process id in the fixture roots here.
const slurmdPID = 812

// addProc gives a fixture root a process as /proc shows it: exe, a link to
// the program (made as an empty file under the root), status with its
// real user, cmdline, comm and its cgroup lines.
func addProc(t *testing.T, dir string, pid, uid int, exe, cmdline, cgroup string) {
	t.Helper()
	proc := filepath.Join(dir, "proc", strconv.Itoa(pid))
	prog := filepath.Join(dir, exe)
	for _, d := range []string{proc, filepath.Dir(prog)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(prog, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(proc, prog)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(rel, filepath.Join(proc, "exe")); err != nil {
		t.Fatal(err)
	}
	comm := filepath.Base(exe)
	for name, c := range map[string]string{
		"status":  fmt.Sprintf("Name:\t%s\nUid:\t%d\t%d\t%d\t%d\n", comm, uid, uid, uid, uid),
		"cmdline": strings.ReplaceAll(cmdline, " ", "\x00") + "\x00",
		"comm":    comm + "\n",
		"cgroup":  cgroup,
	} {
		if err := os.WriteFile(filepath.Join(proc, name), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// addSlurmd gives a fixture root slurmd: its process, in cgroup (the
// lines of /proc/<pid>/cgroup), and /run/slurmd.pid.
func addSlurmd(t *testing.T, dir, cgroup string) {
	t.Helper()
	addProc(t, dir, slurmdPID, 0, "usr/sbin/slurmd", "/usr/sbin/slurmd --systemd", cgroup)
	writeTree(t, dir, "run", map[string]string{"slurmd.pid": strconv.Itoa(slurmdPID) + "\n"})
}
