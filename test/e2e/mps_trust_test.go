package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"gpuprep/internal/testroot"
)

// mpsUID is the job's user in the MPS trust tests: nobody, a uid with no
// rights of its own on the test machine.
const mpsUID = 65534

// mpsTrustConfig is a profile that wants an MPS daemon for every job.
const mpsTrustConfig = `
[general]
log_file = ""
deadline = "60s"
metrics_dir = ""
[profiles.default]
mps = true
[gres]
conf = "/etc/slurm/gres.conf"
`

// mpsNode is the dgxh100 fixture with the simulated MPS control in its
// /usr/bin, reachable by mpsUID (its folder is 0755), with gpuprep's
// hooks run on it as slurmd runs them for a job of mpsUID.
type mpsNode struct {
	t                *testing.T
	root, cfg, spool string
}

func newMPSNode(t *testing.T) *mpsNode {
	t.Helper()
	testroot.NeedRoot(t, "the hooks run as root, the job's user as another uid")
	root := shortRoot(t)
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	buildMPSSim(t, root)
	n := &mpsNode{t: t, root: root, cfg: filepath.Join(t.TempDir(), "gpuprep.toml"), spool: filepath.Join(t.TempDir(), "spool")}
	if err := os.WriteFile(n.cfg, []byte(mpsTrustConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	gres := filepath.Join(root, "etc/slurm/gres.conf")
	if err := os.MkdirAll(filepath.Dir(gres), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gres, []byte(pciGresConf(t, root)), 0o644); err != nil {
		t.Fatal(err)
	}
	return n
}

// hook runs gpuprep-<op> for job (of mpsUID, on GPU 1) and returns its
// exit code and stderr.
func (n *mpsNode) hook(op string, job int) (int, string) {
	n.t.Helper()
	cmd := exec.Command(bin(n.t, "gpuprep-"+op), "--root", n.root, "--gpu-backend", "mock:dgxh100", "--config", n.cfg, "--state-dir", n.spool)
	cmd.Env = []string{
		"SLURM_SCRIPT_CONTEXT=" + op + "_slurmd", fmt.Sprintf("SLURM_JOB_ID=%d", job), "SLURM_JOB_USER=nobody",
		fmt.Sprintf("SLURM_JOB_UID=%d", mpsUID), fmt.Sprintf("SLURM_JOB_GID=%d", mpsUID),
		"SLURMD_NODENAME=dgxh100-01", "SLURM_JOB_GPUS=1",
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), errb.String()
	}
	if err != nil {
		n.t.Fatal(err)
	}
	return 0, errb.String()
}

func (n *mpsNode) must(op string, job int) {
	n.t.Helper()
	if code, stderr := n.hook(op, job); code != 0 {
		n.t.Fatalf("%s of job %d: exit %d (Slurm drains the node): %s", op, job, code, stderr)
	}
}

// daemonDir is the one daemon directory under the root's
// /run/gpuprep/mps ("" when there is none).
func (n *mpsNode) daemonDir() string {
	n.t.Helper()
	m, _ := filepath.Glob(filepath.Join(n.root, "run/gpuprep/mps/nobody-*"))
	switch len(m) {
	case 0:
		return ""
	case 1:
		return m[0]
	}
	n.t.Fatalf("several daemon directories: %v", m)
	return ""
}

// asUser runs script under /bin/sh as mpsUID, with env, and returns
// whether it exited 0 and what it printed.
func asUser(t *testing.T, script string, env ...string) (bool, string) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: mpsUID, Gid: mpsUID}}
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return err == nil, strings.TrimSpace(string(out))
}

// TestMPSPipeDirUserCannotDrainNode is the attack of issue 30, item 1: a
// job's user, while gpuprep's MPS daemon serves their job, tries to
// plant a deep tree, replace the daemon's pid file with a symlink, fill
// the pipe directory, and read it. Each must be refused, the user's own
// MPS client must still reach the daemon (srunwrap's variables, the
// control socket), and the epilog, and the same user's next job, must
// succeed: nothing the user does drains the node.
func TestMPSPipeDirUserCannotDrainNode(t *testing.T) {
	t.Parallel()
	n := newMPSNode(t)
	n.must("prolog", 1)
	dir := n.daemonDir()
	if dir == "" {
		t.Fatal("the prolog started no MPS daemon")
	}
	pipe := dir + "/pipe"
	attacks := []struct{ what, script string }{
		{"plant a tree 10 directories deep", "mkdir -p " + pipe + "/d/d/d/d/d/d/d/d/d/d"},
		{"replace the pid file with a symlink", "rm -f " + pipe + "/nvidia-cuda-mps-control.pid; ln -s /etc/passwd " + pipe + "/nvidia-cuda-mps-control.pid"},
		{"remove the control socket", "rm " + pipe + "/control"},
		{"fill the pipe directory", "head -c 1048576 /dev/zero > " + pipe + "/fill"},
		{"list the pipe directory", "ls " + pipe},
		{"write in the log directory", "echo x > " + dir + "/log/control.log"},
	}
	for _, a := range attacks {
		if ok, out := asUser(t, a.script); ok {
			t.Errorf("the job's user could %s: %q succeeded (%s)", a.what, a.script, out)
		}
	}
	if _, err := os.Lstat(pipe + "/control"); err != nil {
		t.Errorf("the control socket: %v", err)
	}
	// The user's client still reaches the daemon: the control socket
	// through the pipe directory, and srunwrap finds it for the rank.
	if ok, out := asUser(t, "echo get_server_list | "+filepath.Join(n.root, "usr/bin/nvidia-cuda-mps-control"), "CUDA_MPS_PIPE_DIRECTORY="+pipe); !ok {
		t.Errorf("the job's user cannot reach its daemon's control socket: %s", out)
	}
	rank := []string{"SLURM_JOB_ID=1", "SLURM_STEP_ID=0", "SLURM_PROCID=0", "SLURM_LOCALID=0", "SLURM_NODEID=0", "SLURM_NTASKS=1",
		"SLURM_STEP_TASKS_PER_NODE=1", "SLURM_JOB_USER=nobody", "SLURM_STEP_GPUS=1", "CUDA_VISIBLE_DEVICES=1"}
	srunwrap := filepath.Join(n.root, "usr/bin/srunwrap") // where the user may run it
	if b, err := os.ReadFile(bin(t, "srunwrap")); err != nil || os.WriteFile(srunwrap, b, 0o755) != nil {
		t.Fatalf("copying srunwrap: %v", err)
	}
	if ok, out := asUser(t, srunwrap+" --root "+n.root+" -- /usr/bin/env", rank...); !ok || !strings.Contains(out, "CUDA_MPS_PIPE_DIRECTORY="+strings.TrimPrefix(pipe, n.root)+"\n") {
		t.Errorf("srunwrap, run by the job's user, does not point the rank at its daemon (ok %v):\n%s", ok, out)
	}
	n.must("epilog", 1)
	if d := n.daemonDir(); d != "" {
		t.Errorf("the epilog left %s", d)
	}
	// The same user's next job on that GPU gets a daemon again.
	n.must("prolog", 2)
	n.must("epilog", 2)
}

// TestMPSRemovesWhatAnOlderReleaseGaveAway: a daemon directory as
// gpuprep before issue 30 left it, its pipe directory the user's (01700),
// in which the user planted a tree 3,000 directories deep and links to
// root's files, is removed by the epilog all the same (no depth limit, no descriptor per level, no link
// followed), and the node's own files are untouched.
func TestMPSRemovesWhatAnOlderReleaseGaveAway(t *testing.T) {
	t.Parallel()
	n := newMPSNode(t)
	n.must("prolog", 1)
	pipe := n.daemonDir() + "/pipe"
	if err := os.Chown(pipe, mpsUID, mpsUID); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(pipe, 0o700|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("root's"), 0o644); err != nil {
		t.Fatal(err)
	}
	plantDeep(t, pipe, 3000, victim)
	n.must("epilog", 1)
	if d := n.daemonDir(); d != "" {
		t.Errorf("the epilog left %s", d)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "root's" {
		t.Errorf("a file a link pointed at: %q, %v", b, err)
	}
	left, _ := filepath.Glob(filepath.Join(n.root, "run/gpuprep/mps/*"))
	for _, l := range left {
		ents, _ := os.ReadDir(l)
		if len(ents) > 0 {
			t.Errorf("%s still holds %d entries", l, len(ents))
		}
	}
	n.must("prolog", 2)
	n.must("epilog", 2)
}

// plantDeep makes, in dir, a tree depth directories deep, the user's,
// with a link to target and to its folder at the bottom, as the user
// would (a shell's cd stops at PATH_MAX, openat does not).
func plantDeep(t *testing.T, dir string, depth int, target string) {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for range depth {
		if err := unix.Mkdirat(fd, "d", 0o755); err != nil {
			t.Fatal(err)
		}
		nfd, err := unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = nfd
		unix.Fchown(fd, mpsUID, mpsUID)
	}
	defer unix.Close(fd)
	for _, l := range []struct{ to, name string }{{target, "link"}, {filepath.Dir(target), "dirlink"}} {
		if err := unix.Symlinkat(l.to, fd, l.name); err != nil {
			t.Fatal(err)
		}
		unix.Fchownat(fd, l.name, mpsUID, mpsUID, unix.AT_SYMLINK_NOFOLLOW)
	}
}

// TestMPSFakeProcessesAreNotTheDaemon: processes of a user that pass for
// MPS's by name, arguments and environment (the user may choose all
// three) are never taken for gpuprep's daemon or its servers: a fake
// server that respawns as fast as it is killed does not fail the epilog
// ("still run after quit and kill" would drain the node), and a fake
// control daemon set up for another user's pipe directory does not keep
// that user's prolog from starting the real one.
func TestMPSFakeProcessesAreNotTheDaemon(t *testing.T) {
	t.Parallel()
	n := newMPSNode(t)
	n.must("prolog", 1)
	pipe := n.daemonDir() + "/pipe"
	fakes := filepath.Join(n.root, "tmp/fakes")
	if err := os.MkdirAll(fakes, 0o755); err != nil {
		t.Fatal(err)
	}
	sleep, err := os.ReadFile("/bin/sleep")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"nvidia-cuda-mps-server", "nvidia-cuda-mps-control"} {
		if err := os.WriteFile(filepath.Join(fakes, name), sleep, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	loop := exec.Command("/bin/sh", "-c", "while :; do "+fakes+"/nvidia-cuda-mps-server 600; done")
	loop.Env = []string{"PATH=/usr/bin:/bin", "CUDA_MPS_PIPE_DIRECTORY=" + pipe}
	loop.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: &syscall.Credential{Uid: mpsUID, Gid: mpsUID}}
	if err := loop.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-loop.Process.Pid, syscall.SIGKILL); loop.Wait() })
	if code, stderr := n.hook("epilog", 1); code != 0 {
		t.Errorf("epilog with the user's fake server running: exit %d (Slurm drains the node): %s", code, stderr)
	}

	// A fake daemon for the pipe directory of user "daemon" (uid 1) on
	// the same GPU, started before that user's job.
	other := strings.Replace(pipe, "/nobody-", "/daemon-", 1)
	fake := exec.Command(fakes+"/nvidia-cuda-mps-control", "600", "-f")
	fake.Env = []string{"CUDA_MPS_PIPE_DIRECTORY=" + other}
	fake.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: mpsUID, Gid: mpsUID}}
	if err := fake.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Process.Kill(); fake.Wait() })
	cmd := exec.Command(bin(t, "gpuprep-prolog"), "--root", n.root, "--gpu-backend", "mock:dgxh100", "--config", n.cfg, "--state-dir", n.spool)
	cmd.Env = []string{"SLURM_SCRIPT_CONTEXT=prolog_slurmd", "SLURM_JOB_ID=2", "SLURM_JOB_USER=daemon", "SLURM_JOB_UID=1", "SLURM_JOB_GID=1",
		"SLURMD_NODENAME=dgxh100-01", "SLURM_JOB_GPUS=1"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("prolog of user daemon's job: %v\n%s", err, out)
	}
	if _, err := os.Lstat(other + "/control"); err != nil {
		t.Errorf("user daemon's job got no MPS daemon of its own (a fake passed for it): %v", err)
	}
	cmd = exec.Command(cmd.Path, cmd.Args[1:]...)
	cmd.Env = []string{"SLURM_SCRIPT_CONTEXT=epilog_slurmd", "SLURM_JOB_ID=2", "SLURM_JOB_USER=daemon", "SLURM_JOB_UID=1", "SLURM_JOB_GID=1",
		"SLURMD_NODENAME=dgxh100-01", "SLURM_JOB_GPUS=1"}
	cmd.Path = bin(t, "gpuprep-epilog")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("epilog of user daemon's job: %v\n%s", err, out)
	}
}
