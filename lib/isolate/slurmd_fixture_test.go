package isolate

import (
	"strconv"
	"testing"

	"gpuprep/internal/fakeproc"
)

// slurmdPID is slurmd's process id in the fixture roots here.
const slurmdPID = 812

// addSlurmd gives a fixture root slurmd: its process, in cgroup (the
// lines of /proc/<pid>/cgroup), and /run/slurmd.pid.
func addSlurmd(t *testing.T, dir, cgroup string) {
	t.Helper()
	fakeproc.Add(t, dir, slurmdPID, 0, "usr/sbin/slurmd", "/usr/sbin/slurmd --systemd", cgroup)
	writeTree(t, dir, "run", map[string]string{"slurmd.pid": strconv.Itoa(slurmdPID) + "\n"})
}
