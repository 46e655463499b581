package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gpuprep/internal/testroot"
	"gpuprep/lib/mps"
	"gpuprep/test/slurmharness"
)

// mpsGresConfig is gpuprep's [gres] section marking GPUs (a TOML list of
// indexes) for gres/mps, Count=100 each (the default mps_count).
func mpsGresConfig(gpus string) string {
	return "[gres]\nconf = \"/etc/slurm/gres.conf\"\nmps_gpus = " + gpus + "\n"
}

// mpsMinor is the /dev/nvidia minor of each GPU index of the dgxh100
// fixture (PCI order).
var mpsMinor = []int{2, 3, 0, 1, 6, 7, 4, 5}

// mpsGres runs gpuprep-gres on root with cfg, whose mps_gpus marks the
// GPUs idx, and returns gres.conf as printed, the same with its /dev/
// paths moved to fake devices it makes (for the cluster), and the node
// line.
func mpsGres(t *testing.T, root, cfg string, idx []int) (gres, faked, nodeLine string) {
	t.Helper()
	args := []string{"--root", root, "--gpu-backend", "mock:dgxh100", "--config", cfg}
	gres, stderr, code := runBin(t, "gpuprep-gres", args...)
	if code != 0 {
		t.Fatalf("gpuprep-gres exit %d: %s", code, stderr)
	}
	nl, stderr, code := runBin(t, "gpuprep-gres", append(args, "--format", "slurm")...)
	if code != 0 {
		t.Fatalf("gpuprep-gres --format slurm exit %d: %s", code, stderr)
	}
	if n := strings.Count(gres, "\nName=mps "); n != len(idx) {
		t.Fatalf("gpuprep-gres printed %d Name=mps lines, want %d:\n%s", n, len(idx), gres)
	}
	for _, i := range idx {
		if want := fmt.Sprintf("Name=mps File=/dev/nvidia%d Count=100\n", mpsMinor[i]); !strings.Contains(gres, want) {
			t.Fatalf("gpuprep-gres lacks %q:\n%s", want, gres)
		}
	}
	devDir := t.TempDir()
	var minors []int
	for _, m := range regexp.MustCompile(`Name=gpu .*File=/dev/nvidia(\d+)\b`).FindAllStringSubmatch(gres, -1) {
		v, _ := strconv.Atoi(m[1])
		minors = append(minors, v)
	}
	slurmharness.MakeDevices(t, devDir, minors)
	return gres, strings.ReplaceAll(gres, "/dev/", devDir+"/"), firstNonComment(nl)
}

// envFile reads an `env | sort` dump into a map; nil when absent.
func envFile(p string) map[string]string {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	m := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = v
		}
	}
	return m
}

// waitFile polls up to 20 s for a file to exist (a prolog's or epilog's
// dump, written while slurmd runs it).
func waitFile(t *testing.T, p string) {
	t.Helper()
	for d := time.Now().Add(20 * time.Second); time.Now().Before(d); time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(p); err == nil {
			return
		}
	}
	t.Fatalf("%s not written in 20 s", p)
}

// gresIdx is the GPU index Slurm shows for a running job's gres
// (`scontrol show job -d`: "GRES=mps:90(IDX:1)").
func gresIdx(t *testing.T, c *slurmharness.Cluster, id int) string {
	t.Helper()
	out, _, err := c.Run(t.Context(), "scontrol", "show", "job", "-d", strconv.Itoa(id))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`GRES=\S*\(IDX:([0-9,-]+)\)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("job %d: no GRES=...(IDX:n) in scontrol show job -d:\n%s", id, out)
	}
	return m[1]
}

// mpsVars are the variables of a prolog's or task's environment that
// name the job's GPUs and its MPS share ("-" when unset), in this order.
var mpsVars = []string{"SLURM_JOB_GPUS", "CUDA_VISIBLE_DEVICES", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "GPU_DEVICE_ORDINAL"}

func pick(env map[string]string, names []string) string {
	var out []string
	for _, n := range names {
		v, ok := env[n]
		if !ok {
			v = "-"
		}
		out = append(out, n+"="+v)
	}
	return strings.Join(out, " ")
}

// TestSlurmGresMPSPrologEnv records what Slurm 22.05 gives the prolog and
// epilog of a gres/mps job, with gres.conf from gpuprep-gres ([gres]
// mps_gpus on the dgxh100 fixture, whose GPU index i is /dev/nvidia
// mpsMinor[i]; Count=100 each) and GresTypes=gpu,mps. For a job of
// --gres=mps:N (srun or sbatch) both see
//
//	CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=N  the job's share of the GPU's Count
//	CUDA_VISIBLE_DEVICES=k               k: Slurm's index of the GPU whose
//	SLURM_JOB_GPUS=k                     mps the job got (the position of
//	                                     its Name=gpu line), as `scontrol
//	                                     show job -d` shows it (IDX:k);
//	                                     not the minor, not the position
//	                                     of its Name=mps line
//	GPU_DEVICE_ORDINAL                   unset
//
// and a --gres=gpu:1 job's has no CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
// (gpuprep tells gres/mps jobs by it). The task of an mps job sees
// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=N, SLURM_STEP_GPUS=k and, without
// ConstrainDevices, CUDA_VISIBLE_DEVICES=k; no SLURM_JOB_GPUS.
// mps_gpus = [1, 6] tells k from the minor (3) and the Name=mps position
// (0) on GPU 1; [6] does so on GPU 6 (minor 4, position 0).
func TestSlurmGresMPSPrologEnv(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		mps  []int
	}{{"gpus-1-6", []int{1, 6}}, {"gpu-6", []int{6}}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testMPSPrologEnv(t, tc.mps)
		})
	}
}

func testMPSPrologEnv(t *testing.T, mpsGPUs []int) {
	var list []string
	for _, i := range mpsGPUs {
		list = append(list, strconv.Itoa(i))
	}
	cfg := filepath.Join(t.TempDir(), "gpuprep.toml")
	if err := os.WriteFile(cfg, []byte(mpsGresConfig("["+strings.Join(list, ", ")+"]")), 0o644); err != nil {
		t.Fatal(err)
	}
	_, gres, nodeLine := mpsGres(t, testroot.Shared(t, "dgxh100"), cfg, mpsGPUs)
	envDir := t.TempDir()
	dump := func(op string) string {
		f := envDir + "/" + op + "-$SLURM_JOB_ID.env"
		return "#!/bin/sh\nenv | sort > " + f + ".tmp && mv " + f + ".tmp " + f + "\n"
	}
	cl := slurmharness.Start(t, slurmharness.Options{
		NodeLine:  nodeLine,
		GresConf:  gres,
		ExtraConf: []string{"GresTypes=gpu,mps"},
		Files:     map[string]string{"prolog.sh": dump("prolog"), "epilog.sh": dump("epilog")},
		Prolog:    "prolog.sh",
		Epilog:    "epilog.sh",
	})
	if want := fmt.Sprintf(",mps:%d", 100*len(mpsGPUs)); !strings.Contains(cl.NodeLine, want) {
		t.Fatalf("node line %s: want %s", cl.NodeLine, want)
	}
	// hooks holds what the prolog and the epilog of job id saw against
	// the job's share and its GPU index idx.
	hooks := func(what, id, share, idx string) {
		t.Helper()
		want := "SLURM_JOB_GPUS=" + idx + " CUDA_VISIBLE_DEVICES=" + idx + " CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=" + share + " GPU_DEVICE_ORDINAL=-"
		for _, op := range []string{"prolog", "epilog"} {
			p := filepath.Join(envDir, op+"-"+id+".env")
			waitFile(t, p)
			got := pick(envFile(p), mpsVars)
			t.Logf("%s (job %s) %s: %s", what, id, op, got)
			if got != want {
				t.Errorf("%s (job %s): %s saw %s, want %s", what, id, op, got, want)
			}
		}
	}
	taskVars := append(slices.Clone(mpsVars), "SLURM_STEP_GPUS")
	task := `echo "JOB=$SLURM_JOB_ID"; env`

	// 1. srun --gres=mps:25: its GPU is one of the mps GPUs.
	tenv := envFile(writeTemp(t, cl.MustSrun("--gres=mps:25", "-n1", "sh", "-c", task)))
	t.Logf("srun --gres=mps:25 task: %s", pick(tenv, taskVars))
	p := filepath.Join(envDir, "prolog-"+tenv["JOB"]+".env")
	waitFile(t, p)
	idx := envFile(p)["CUDA_VISIBLE_DEVICES"]
	if !slices.Contains(list, idx) {
		t.Errorf("srun --gres=mps:25: prolog's CUDA_VISIBLE_DEVICES=%q, want one of the mps GPUs' indexes %v", idx, list)
	}
	// No ConstrainDevices here: the task's numbers are Slurm's too.
	if tenv["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] != "25" || tenv["CUDA_VISIBLE_DEVICES"] != idx || tenv["SLURM_STEP_GPUS"] != idx {
		t.Errorf("srun --gres=mps:25: task sees %s, want CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25 CUDA_VISIBLE_DEVICES=SLURM_STEP_GPUS=%s", pick(tenv, taskVars), idx)
	}
	hooks("srun --gres=mps:25", tenv["JOB"], "25", idx)

	// 2. sbatch --gres=mps:90: the GPU index is the one Slurm shows.
	// Once the first job is over (its mps released): Slurm's main
	// scheduler starts no mps job on the node while another holds mps
	// there, as seen with 22.05; backfill does, up to 30 s later.
	if st, reason, ok := cl.WaitNodeState(20*time.Second, "idle"); !ok {
		t.Fatalf("node %s (%s) after the srun job, want idle", st, reason)
	}
	stop := filepath.Join(t.TempDir(), "stop")
	t0 := time.Now()
	id := cl.Sbatch("while [ ! -e "+stop+" ]; do sleep 0.1; done\n", "--gres=mps:90", "-n1")
	waitRunning(t, cl, id)
	t.Logf("sbatch --gres=mps:90 running after %v", time.Since(t0).Round(time.Millisecond))
	idx = gresIdx(t, cl, id)
	if !slices.Contains(list, idx) {
		t.Errorf("sbatch --gres=mps:90: scontrol shows IDX:%s, want one of %v", idx, list)
	}
	if err := os.WriteFile(stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if st := cl.WaitJob(id, 30*time.Second); st != "COMPLETED" {
		t.Fatalf("sbatch --gres=mps:90: %s", st)
	}
	hooks("sbatch --gres=mps:90", strconv.Itoa(id), "90", idx)

	// 3. A gpu job: no MPS variable.
	genv := envFile(writeTemp(t, cl.MustSrun("--gres=gpu:1", "-n1", "sh", "-c", task)))
	p = filepath.Join(envDir, "prolog-"+genv["JOB"]+".env")
	waitFile(t, p)
	penv := envFile(p)
	t.Logf("srun --gres=gpu:1 prolog: %s", pick(penv, mpsVars))
	g := penv["SLURM_JOB_GPUS"]
	if _, mps := penv["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"]; mps || g == "" || penv["CUDA_VISIBLE_DEVICES"] != g || penv["GPU_DEVICE_ORDINAL"] != g {
		t.Errorf("srun --gres=gpu:1: prolog saw %s, want SLURM_JOB_GPUS = CUDA_VISIBLE_DEVICES = GPU_DEVICE_ORDINAL and no CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", pick(penv, mpsVars))
	}
}

// writeTemp writes s to a new file of the test and returns its path.
func writeTemp(t *testing.T, s string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "out")
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// shortRoot unpacks the dgxh100 fixture into a new folder with a short
// path (the MPS pipe directory, <root>/run/gpuprep/mps/<user>-<key>/pipe,
// must stay within lib/mps's 80 bytes, for UNIX socket paths), removed
// when the test ends: in /dev/shm where it can (tens of thousands of
// small files unpack there in a fraction of the time on disk), else /tmp.
func shortRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "m")
	if err != nil {
		if dir, err = os.MkdirTemp("/tmp", "m"); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	archive, err := testroot.Archive("dgxh100")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := testroot.Extract(f, dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// buildMPSSim builds the simulated nvidia-cuda-mps-control
// (internal/mpssim) into root's /usr/bin, where lib/mps.Find looks, and
// kills, when the test ends, any daemon of it still running (one the
// epilog did not quit lives 10 minutes).
func buildMPSSim(t *testing.T, root string) string {
	t.Helper()
	out := filepath.Join(root, "usr/bin/nvidia-cuda-mps-control")
	cmd := exec.Command("go", "build", "-o", out, "./internal/mpssim/cmd/nvidia-cuda-mps-control")
	cmd.Dir = testroot.Module(t)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build mpssim: %v\n%s", err, b)
	}
	t.Cleanup(func() {
		for _, pid := range procsOf(out) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return out
}

// procsOf lists the live (not zombie) processes running program bin.
func procsOf(bin string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cl, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		if argv0, _, _ := strings.Cut(string(cl), "\x00"); argv0 == bin && procLive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// procLive says whether pid runs: it exists and is no zombie (the
// daemon's parent, after -d, is PID 1, which may be slow to reap).
func procLive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && len(b) > i+2 && b[i+2] != 'Z' && b[i+2] != 'X'
}

// TestSlurmGresMPSDaemon: gpuprep's prolog and epilog as Slurm's, on the
// dgxh100 fixture with the mock GPUs and the simulated
// nvidia-cuda-mps-control, a profile that does not set mps and gres.conf
// from gpuprep-gres (mps_gpus = [1, 6]). A --gres=mps:25 job gets an MPS
// control daemon for its user on its GPU (the one Slurm shows, IDX): while
// it runs, <root>/run/gpuprep/mps/root-<key>/pipe holds the control
// socket, the daemon named in its pid file runs and answers
// get_server_list; after the job (its epilog) the daemon is gone and the
// directory removed. A --gres=gpu:1 job starts none.
func TestSlurmGresMPSDaemon(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	root := shortRoot(t)
	ctl := buildMPSSim(t, root)
	t.Logf("root %s unpacked and %s built in %v", root, filepath.Base(ctl), time.Since(t0).Round(time.Millisecond))
	cfg := filepath.Join(t.TempDir(), "gpuprep.toml")
	conf := strings.Replace(hookConfig, "[gres]\n", "[gres]\nmps_gpus = [1, 6]\n", 1)
	if strings.Contains(conf, "mps =") || !strings.Contains(conf, "mps_gpus") {
		t.Fatalf("hookConfig: want no mps knob and a [gres] section:\n%s", conf)
	}
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	gres, faked, nodeLine := mpsGres(t, root, cfg, []int{1, 6})
	// The hooks map SLURM_JOB_GPUS through the root's gres.conf.
	if err := os.MkdirAll(filepath.Join(root, "etc/slurm"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/slurm/gres.conf"), []byte(gres), 0o644); err != nil {
		t.Fatal(err)
	}
	spool := filepath.Join(t.TempDir(), "spool")
	args := " --root " + root + " --gpu-backend mock:dgxh100 --config " + cfg + " --state-dir " + spool + ` "$@"`
	cl := slurmharness.Start(t, slurmharness.Options{
		NodeLine:  nodeLine,
		GresConf:  faked,
		ExtraConf: []string{"GresTypes=gpu,mps"},
		Files: map[string]string{
			"prolog.sh": "#!/bin/sh\nexec " + bin(t, "gpuprep-prolog") + args + "\n",
			"epilog.sh": "#!/bin/sh\nexec " + bin(t, "gpuprep-epilog") + args + "\n",
		},
		Prolog: "prolog.sh",
		Epilog: "epilog.sh",
	})
	base := filepath.Join(root, "run/gpuprep/mps")
	daemonDirs := func() []string {
		m, _ := filepath.Glob(filepath.Join(base, "*"))
		return m
	}
	uuids := testroot.GPUs(t, root)

	// 1. A --gres=mps:25 job: the daemon runs while it does.
	stop := filepath.Join(t.TempDir(), "stop")
	start := time.Now()
	id := cl.Sbatch("while [ ! -e "+stop+" ]; do sleep 0.1; done\n", "--gres=mps:25", "-n1")
	waitRunning(t, cl, id)
	idx, err := strconv.Atoi(gresIdx(t, cl, id))
	if err != nil || (idx != 1 && idx != 6) {
		t.Fatalf("the mps job's GPU is %q, want 1 or 6", gresIdx(t, cl, id))
	}
	key, err := mps.Key([]string{uuids[idx].UUID})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "root-"+key)
	pipe := filepath.Join(dir, "pipe")
	pid := 0
	// The job shows RUNNING while its prolog may still run: poll.
	for d := time.Now().Add(20 * time.Second); pid == 0 && time.Now().Before(d); time.Sleep(50 * time.Millisecond) {
		fi, err := os.Stat(filepath.Join(pipe, "control"))
		if err != nil || fi.Mode()&os.ModeSocket == 0 {
			continue
		}
		b, err := os.ReadFile(filepath.Join(pipe, "nvidia-cuda-mps-control.pid"))
		if err != nil {
			continue
		}
		if p, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && procLive(p) {
			pid = p
		}
	}
	if pid == 0 {
		t.Fatalf("job %d on GPU %d: no live MPS daemon with a control socket in %s after 20 s; %s holds %v\n%s",
			id, idx, pipe, base, daemonDirs(), cl.LogTails(20))
	}
	t.Logf("job %d (GPU %d): daemon %d in %s, %v after sbatch", id, idx, pid, pipe, time.Since(start).Round(time.Millisecond))
	if d := daemonDirs(); len(d) != 1 || d[0] != dir {
		t.Errorf("daemon directories %v, want only %s", d, dir)
	}
	if got := procsOf(ctl); !slices.Equal(got, []int{pid}) {
		t.Errorf("running %s: %v, want the daemon %d alone", ctl, got, pid)
	}
	q := exec.Command(ctl)
	q.Env = []string{"CUDA_MPS_PIPE_DIRECTORY=" + pipe}
	q.Stdin = strings.NewReader("get_server_list\n")
	if out, err := q.CombinedOutput(); err != nil {
		t.Errorf("get_server_list to the job's daemon: %v: %s", err, out)
	}

	// 2. After the job (its epilog) the daemon is gone, its directory too.
	if err := os.WriteFile(stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if st := cl.WaitJob(id, 30*time.Second); st != "COMPLETED" {
		t.Fatalf("mps job %d: %s\n%s", id, st, cl.LogTails(20))
	}
	end := time.Now()
	var left []string
	for d := time.Now().Add(20 * time.Second); time.Now().Before(d); time.Sleep(50 * time.Millisecond) {
		if left = daemonDirs(); !procLive(pid) && len(left) == 0 {
			break
		}
	}
	if procLive(pid) || len(left) != 0 {
		t.Fatalf("20 s after job %d: daemon %d live %v, %s holds %v\n%s", id, pid, procLive(pid), base, left, cl.LogTails(20))
	}
	t.Logf("daemon quit and %s removed %v after the job's end", dir, time.Since(end).Round(time.Millisecond))

	// 3. A --gres=gpu:1 job starts no daemon (the prolog has run when the
	// task starts: PrologFlags=Alloc).
	if out := cl.MustSrun("--gres=gpu:1", "-n1", "ls", "-A", base); strings.TrimSpace(out) != "" {
		t.Errorf("inside a --gres=gpu:1 job, %s holds %q, want nothing", base, out)
	}
	if got := procsOf(ctl); len(got) != 0 {
		t.Errorf("after a --gres=gpu:1 job, %s runs: %v", ctl, got)
	}
}
