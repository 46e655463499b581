package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gpuprep/internal/testroot"
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
// GPUs idx, and returns gres.conf (its /dev/ paths moved to fake devices
// it makes) and the node line.
func mpsGres(t *testing.T, root, cfg string, idx []int) (gres, nodeLine string) {
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
	return strings.ReplaceAll(gres, "/dev/", devDir+"/"), firstNonComment(nl)
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
	gres, nodeLine := mpsGres(t, testroot.Shared(t, "dgxh100"), cfg, mpsGPUs)
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
	stop := filepath.Join(t.TempDir(), "stop")
	id := cl.Sbatch("while [ ! -e "+stop+" ]; do sleep 0.1; done\n", "--gres=mps:90", "-n1")
	waitRunning(t, cl, id)
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
