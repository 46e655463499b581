package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gpuprep/internal/gpumock"
	"gpuprep/internal/testroot"
	"gpuprep/lib/evidence"
	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
)

// The job's user and another user, for the evidence's ACL entry.
const (
	evidenceUID = 65534
	otherUID    = 65533
)

// runGPUs makes GPU index i (bus order) of the fixture root draw watts,
// held at its power limit for share of the time, from now on.
func runGPUs(t *testing.T, root string, watts, share float64, gpus ...int) {
	t.Helper()
	devs := gpuDevices(t, root)
	for _, i := range gpus {
		c := gpumock.Counters{Rates: map[gpu.Counter]float64{gpu.EnergyMJ: watts * 1000, gpu.PowerCapNs: share * 1e9}, Since: time.Now()}
		if err := gpumock.WriteCounters(host.NewRoot(root), devs[i], c); err != nil {
			t.Fatal(err)
		}
	}
}

// gpuDevices are the fixture root's GPU UUIDs in bus order.
func gpuDevices(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	for _, bus := range listDir(t, filepath.Join(root, "proc/driver/nvidia/gpus")) {
		b, err := os.ReadFile(filepath.Join(root, "proc/driver/nvidia/gpus", bus, "information"))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "GPU UUID:"); ok {
				out = append(out, strings.TrimSpace(v))
			}
		}
	}
	return out
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// openUp lets every user reach p: a+rx on p and each folder above it (the
// test's temporary folders are 0700; a node's /etc/gpuprep and
// /var/lib are not).
func openUp(t *testing.T, p string) {
	t.Helper()
	for d := p; d != "/" && d != "."; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm()&0o005 != 0o005 {
			if err := os.Chmod(d, st.Mode().Perm()|0o055); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// reportAs runs the epilog program (copied where any user may run it) as
// uid: --report --job job --json, and returns its exit code, stdout and
// stderr.
func (n *hookNode) reportAs(uid int, prog string, job int) (int, string, string) {
	n.t.Helper()
	cmd := exec.Command(prog, "--root", n.root, "--gpu-backend", "mock:dgxh100", "--config", n.cfg, "--state-dir", n.spool,
		"--report", "--job", fmt.Sprint(job), "--json")
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String(), errb.String()
	} else if err != nil {
		n.t.Fatal(err)
	}
	return 0, out.String(), errb.String()
}

// userProgram copies gpuprep-epilog where uid 65534 may run it.
func userProgram(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "gpuprep-user-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	b, err := os.ReadFile(bin(t, "gpuprep-epilog"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "gpuprep-epilog")
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatal(err)
	}
	openUp(t, dir)
	return p
}

// TestEvidenceOnlyForTheJobsUser runs the real prolog and epilog of a job
// of uid 65534 whose GPU draws 700 W, 30% of the time at its power limit.
// The job's user reads the job so far while it runs and its record after
// it, without root; another user reads neither, and cannot plant a record
// in the evidence directory.
func TestEvidenceOnlyForTheJobsUser(t *testing.T) {
	t.Parallel()
	n := newHookNode(t)
	runGPUs(t, n.root, 700, 0.3, 0)
	uid := fmt.Sprintf("SLURM_JOB_UID=%d", evidenceUID)
	if code, stderr := n.hook("prolog", 41, "0", "", uid); code != 0 {
		t.Fatalf("prolog: %d %s", code, stderr)
	}
	for _, p := range []string{n.root, n.cfg, filepath.Dir(n.spool)} {
		openUp(t, p)
	}
	prog := userProgram(t)
	time.Sleep(2 * time.Second)
	code, out, stderr := n.reportAs(evidenceUID, prog, 41)
	r := decodeRecord(t, code, out, stderr)
	if !r.Running || r.End == nil || len(r.GPUs) != 1 || r.GPUs[0].MeanPowerW == nil || *r.GPUs[0].MeanPowerW < 600 || *r.GPUs[0].MeanPowerW > 800 {
		t.Fatalf("the job's user, while it runs: %+v; want the job so far at about 700 W", r.GPUs)
	}
	if code, _, stderr := n.reportAs(otherUID, prog, 41); code == 0 || !strings.Contains(stderr, "permission denied") {
		t.Errorf("another user read job 41's evidence: exit %d %s", code, stderr)
	}
	if code, stderr := n.hook("epilog", 41, "0", "", uid); code != 0 {
		t.Fatalf("epilog: %d %s", code, stderr)
	}
	code, out, stderr = n.reportAs(evidenceUID, prog, 41)
	r = decodeRecord(t, code, out, stderr)
	g := r.GPUs[0]
	if r.Running || g.EnergyJ == nil || *g.EnergyJ <= 0 || g.Throttle[gpu.PowerCapNs].Share < 0.25 || g.Throttle[gpu.PowerCapNs].Share > 0.35 {
		t.Fatalf("the job's record after its epilog: running %v, GPU %+v; want its energy and a 30%% power cap share", r.Running, g)
	}
	if code, _, stderr := n.reportAs(otherUID, prog, 41); code == 0 || !strings.Contains(stderr, "permission denied") {
		t.Errorf("another user read job 41's record: exit %d %s", code, stderr)
	}
	plant := exec.Command("/bin/sh", "-c", "echo '{}' > "+filepath.Join(n.spool, "jobs", "42-20261206T000000Z.json"))
	plant.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: evidenceUID, Gid: evidenceUID}}
	if b, err := plant.CombinedOutput(); err == nil {
		t.Errorf("the job's user planted a record in the evidence directory: %s", b)
	}
	if code, _, stderr := n.reportAs(evidenceUID, prog, 0); code != 2 || !strings.Contains(stderr, "job id") {
		t.Errorf("--job 0: exit %d %s, want 2 naming the job id", code, stderr)
	}
}

// decodeRecord is --report --job --json's record, failing the test on a
// failed run.
func decodeRecord(t *testing.T, code int, out, stderr string) evidence.Record {
	t.Helper()
	if code != 0 {
		t.Fatalf("--report --job: exit %d: %s", code, stderr)
	}
	var r evidence.Record
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("--report --job --json: %v\n%s", err, out)
	}
	return r
}

// TestEvidenceInSlurm: under the real Slurm of make test, a batch job on
// a GPU drawing 500 W ends with `gpuprep-epilog --report --job
// "$SLURM_JOB_ID"` (the job so far, in its output, as docs/users.md shows);
// after it the epilog's record has the whole job, and a job without GPUs
// has none.
func TestEvidenceInSlurm(t *testing.T) {
	t.Parallel()
	n := newHookNode(t)
	c := startHookCluster(t, n, "")
	runGPUs(t, n.root, 500, 0, 0, 1, 2, 3, 4, 5, 6, 7)
	report := bin(t, "gpuprep-epilog") + " --root " + n.root + " --gpu-backend mock:dgxh100 --config " + n.cfg + " --state-dir " + n.spool
	job := c.Sbatch("sleep 2\n"+report+` --report --job "$SLURM_JOB_ID"`, "--gres=gpu:1")
	if st := c.WaitJob(job, 60*time.Second); st != "COMPLETED" {
		t.Fatalf("job: %s\n%s", st, c.LogTails(30))
	}
	out := c.JobOutput(job)
	if !strings.Contains(out, "running, so far") || !strings.Contains(out, "W") {
		t.Errorf("the job's last line, --report --job: want the job so far:\n%s", out)
	}
	b, err := exec.Command(bin(t, "gpuprep-epilog"), "--root", n.root, "--gpu-backend", "mock:dgxh100", "--config", n.cfg,
		"--state-dir", n.spool, "--report", "--job", fmt.Sprint(job), "--json").Output()
	r := decodeRecord(t, exitCode(err), string(b), "")
	if r.Running || len(r.GPUs) != 1 || r.GPUs[0].MeanPowerW == nil || *r.GPUs[0].MeanPowerW < 400 || *r.GPUs[0].MeanPowerW > 600 {
		t.Fatalf("job %d's record: running %v, GPUs %+v; want ended at about 500 W", job, r.Running, r.GPUs)
	}
	cpu := c.Sbatch("true")
	if st := c.WaitJob(cpu, 60*time.Second); st != "COMPLETED" {
		t.Fatalf("job without GPUs: %s", st)
	}
	if matches, _ := filepath.Glob(filepath.Join(n.spool, "jobs", fmt.Sprintf("%d-*.json", cpu))); len(matches) > 0 {
		t.Errorf("a job without GPUs got evidence: %v", matches)
	}
}

// exitCode is err's exit code (0 for nil, -1 when it did not run).
func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// TestEpilogSlurmctldExample runs examples/evidence/epilog-slurmctld.sh as
// slurmctld would for a two-node job, with an ssh that reaches each
// node's state dir in a folder of the test (and scontrol's hostnames):
// the parts land in one directory per job, and --report --job --from
// merges them.
func TestEpilogSlurmctldExample(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	nodes := filepath.Join(dir, "nodes")
	for i, node := range []string{"gpu01", "gpu02"} {
		r := evidence.Record{Format: evidence.Format, Job: evidence.Job{ID: "77", User: "alice", UID: 1000, Node: node, Start: time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)}}
		c0 := gpu.Counters{Values: map[gpu.Counter]uint64{gpu.EnergyMJ: 1e9}}
		c1 := gpu.Counters{Values: map[gpu.Counter]uint64{gpu.EnergyMJ: 1e9 + uint64(i+1)*1_000_000_000}}
		r.Start = evidence.Snapshot{Time: r.Job.Start, GPUs: []evidence.GPUSnapshot{{UUID: "GPU-" + node, Counters: &c0}}}
		r.Finish(evidence.Snapshot{Time: r.Job.Start.Add(time.Hour), GPUs: []evidence.GPUSnapshot{{UUID: "GPU-" + node, Counters: &c1}}})
		b, _ := json.MarshalIndent(r, "", "  ")
		jobs := filepath.Join(nodes, node, "var/lib/gpuprep/jobs")
		if err := os.MkdirAll(jobs, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(jobs, "77-20261206T100000Z.json"), b, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	fakes := filepath.Join(dir, "bin")
	os.MkdirAll(fakes, 0o755)
	os.WriteFile(filepath.Join(fakes, "ssh"), []byte("#!/bin/bash\nwhile [ \"$1\" = -o ]; do shift 2; done\nhost=$1; shift\n"+
		"exec sh -c \"${*//\\/var\\/lib\\/gpuprep/"+strings.ReplaceAll(nodes, "/", "\\/")+"\\/$host\\/var\\/lib\\/gpuprep}\"\n"), 0o755)
	os.WriteFile(filepath.Join(fakes, "scontrol"), []byte("#!/bin/sh\n[ \"$1 $2\" = \"show hostnames\" ] && printf 'gpu01\\ngpu02\\n'\n"), 0o755)
	root, err := testroot.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", filepath.Join(root, "examples/evidence/epilog-slurmctld.sh"))
	cmd.Env = []string{"PATH=" + fakes + ":/usr/bin:/bin", "SLURM_JOB_ID=77", "SLURM_JOB_NODELIST=gpu[01-02]", "GPUPREP_EVIDENCE_DIR=" + filepath.Join(dir, "evidence")}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("epilog-slurmctld.sh: %v\n%s", err, b)
	}
	cfg := filepath.Join(dir, "gpuprep.toml")
	os.WriteFile(cfg, []byte("[general]\nlog_file = \"\"\n"), 0o644)
	b, err := exec.Command(bin(t, "gpuprep-epilog"), "--config", cfg, "--report", "--job", "77", "--from", filepath.Join(dir, "evidence", "77"), "--json").CombinedOutput()
	var v evidence.JobView
	if err != nil || json.Unmarshal(b, &v) != nil || len(v.Parts) != 2 || v.Total == nil || v.Total.EnergyJ == nil || *v.Total.EnergyJ != 3_000_000 {
		t.Fatalf("the gathered parts, merged: %v\n%s; want 2 parts, 3 MJ", err, b)
	}
}
