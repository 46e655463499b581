package isolate

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/host"
	"gpuprep/lib/isolate/cgwriter"
)

// TestRealCgroup applies and restores the isolation read-write on the
// real cgroup v2 of this machine, in a throwaway subtree of its own
// (/sys/fs/cgroup/gpuprep-test-<pid>, laid out like systemd's and Slurm's
// tree, seen through a bind mount as a root's sys/fs/cgroup), with a
// process in a service and one in a job. It runs only with
// GPUPREP_REAL_CGROUP=1, as root, where /sys/fs/cgroup is cgroup2 with the
// cpuset controller; it never writes outside its subtree except enabling
// cpuset in /sys/fs/cgroup/cgroup.subtree_control when it is not (left
// on).
func TestRealCgroup(t *testing.T) {
	const cg = "/sys/fs/cgroup"
	if os.Getenv("GPUPREP_REAL_CGROUP") != "1" {
		t.Skip("set GPUPREP_REAL_CGROUP=1 to run on this machine's cgroup v2 (as root)")
	}
	var st unix.Statfs_t
	if err := unix.Statfs(cg, &st); err != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
		t.Skip(cg + " is not cgroup v2")
	}
	if ctrls, _ := os.ReadFile(cg + "/cgroup.controllers"); !strings.Contains(string(ctrls), "cpuset") || os.Geteuid() != 0 {
		t.Skip("no cpuset controller in " + cg + ", or not root")
	}
	sub, _ := os.ReadFile(cg + "/cgroup.subtree_control")
	if !strings.Contains(string(sub), "cpuset") {
		write(t, cg+"/cgroup.subtree_control", "+cpuset")
	}
	base := filepath.Join(cg, fmt.Sprintf("gpuprep-test-%d", os.Getpid()))
	dirs := []string{"", "system.slice", "system.slice/svc.service", "system.slice/slurmstepd.scope", "system.slice/slurmstepd.scope/job_1", "user.slice", "init.scope"}
	for _, d := range dirs {
		if err := os.Mkdir(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := os.Remove(filepath.Join(base, dirs[i])); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
	})
	// Slurm enables cpuset down to its jobs; system.slice's units are left
	// for gpuprep to enable.
	write(t, base+"/cgroup.subtree_control", "+cpuset")
	write(t, base+"/system.slice/cgroup.subtree_control", "-cpuset")
	root := t.TempDir()
	mnt := filepath.Join(root, "sys/fs/cgroup")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(base, mnt, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind mount: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(mnt, 0); err != nil {
			t.Errorf("cleanup: unmount %s: %v", mnt, err)
		}
	})
	addSlurmd(t, root, "0::/system.slice/slurmd.service\n")
	svc := start(t, base+"/system.slice/svc.service")
	job := start(t, base+"/system.slice/slurmstepd.scope/job_1")
	all := allowed(t, svc)
	hk := cpuset.New(all.Min()).String()

	h, err := Open(host.NewRoot(root))
	if err != nil || !h.V2 {
		t.Fatalf("Open: %v", err)
	}
	before, err := h.Read(Options{})
	if err != nil || before.Format() != "" {
		t.Fatalf("Read before = %q, %v", before.Format(), err)
	}
	if _, err := h.Apply(Options{Writer: cgwriter.Writer{}}, hk, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.Read(Options{}); got.Format() != hk {
		t.Errorf("Read after Apply = %q, want %s", got.Format(), hk)
	}
	if got := allowed(t, svc); got.String() != hk {
		t.Errorf("service process on %s, want %s", got, hk)
	}
	if got := allowed(t, job); !got.Equal(all) {
		t.Errorf("job process on %s, want all of %s", got, all)
	}
	if _, err := h.Apply(Options{Writer: cgwriter.Writer{}}, before.Format(), nil); err != nil {
		t.Fatal(err)
	}
	if got := allowed(t, svc); !got.Equal(all) {
		t.Errorf("service process after restore on %s, want %s", got, all)
	}
	if got, _ := h.Read(Options{}); got.Format() != "" {
		t.Errorf("Read after restore = %q", got.Format())
	}
}

func write(t *testing.T, p, v string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(v), 0); err != nil {
		t.Fatal(err)
	}
}

// start runs a sleeping process in a cgroup, killed at the end of the test.
func start(t *testing.T, cgroup string) int {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	write(t, cgroup+"/cgroup.procs", strconv.Itoa(cmd.Process.Pid))
	return cmd.Process.Pid
}

// allowed reads a process's Cpus_allowed_list.
func allowed(t *testing.T, pid int) cpuset.Set {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
			return cpuset.MustParse(strings.TrimSpace(v))
		}
	}
	t.Fatalf("no Cpus_allowed_list for %d", pid)
	return cpuset.Set{}
}
