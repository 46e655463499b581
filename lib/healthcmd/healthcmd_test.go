package healthcmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpuprep/internal/testroot"
	"gpuprep/lib/cli"
	"gpuprep/lib/state"
)

// healthRunner runs gpuprep-health (--no-drain: no scontrol here) and the
// prolog on one simulated node (dgxh100, mock GPUs) with one spool.
type healthRunner struct {
	t                 *testing.T
	root, spool, cfg  string
	metrics, kmsgPath string
}

func newHealthRunner(t *testing.T) *healthRunner {
	dir := t.TempDir()
	h := &healthRunner{t: t, root: testroot.Unpack(t, "dgxh100"), spool: filepath.Join(dir, "spool"),
		cfg: filepath.Join(dir, "g.toml"), metrics: filepath.Join(dir, "textfile")}
	os.Mkdir(h.metrics, 0o755)
	os.WriteFile(h.cfg, []byte("[general]\nlog_file = \"\"\nmetrics_dir = \""+h.metrics+"\"\n"), 0o644)
	h.kmsgPath = filepath.Join(h.root, "dev/kmsg")
	os.MkdirAll(filepath.Dir(h.kmsgPath), 0o755)
	os.MkdirAll(filepath.Join(h.root, "proc/sys/kernel/random"), 0o755)
	os.WriteFile(filepath.Join(h.root, "proc/sys/kernel/random/boot_id"), []byte("11111111-2222-3333-4444-555555555555\n"), 0o644)
	os.WriteFile(h.kmsgPath, []byte("6,0,0,-;Linux version 6.1.0\n"), 0o644)
	return h
}

func (h *healthRunner) kmsg(line string) {
	f, err := os.OpenFile(h.kmsgPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	f.WriteString(line + "\n")
	f.Close()
}

func (h *healthRunner) health(extra ...string) (int, string, string) {
	var out, errb bytes.Buffer
	args := append([]string{"--root", h.root, "--gpu-backend", "mock:dgxh100", "--config", h.cfg, "--state-dir", h.spool, "--node", "gpu01", "--no-drain"}, extra...)
	code := Main(cli.Env{Args: args, Getenv: func(string) string { return "" }, Stdout: &out, Stderr: &errb})
	return code, out.String(), errb.String()
}

// TestHealthProgramXIDOnce: an Xid 79 fails gpuprep-health (exit 1,
// fatal), new to that run only: the next prolog does not read it again,
// but fails on it standing (no gres.conf here: the job's GPUs are unknown,
// so every GPU counts), and gpuprep-health keeps failing with --no-drain
// (for NHC), whatever reset line the log shows, until an admin clears it.
// The Xid is counted once, in gpuprep-health.prom, by GPU.
func TestHealthProgramXIDOnce(t *testing.T) {
	h := newHealthRunner(t)
	h.kmsg("4,1,5000000,-;NVRM: Xid (PCI:0000:18:00): 79, pid=4242, name=python, GPU has fallen off the bus.")
	code, out, stderr := h.health()
	if code != cli.ExitMismatch || !strings.Contains(out, "xid             GPU 0 (0000:18:00.0)  fail (fatal)") {
		t.Fatalf("first run: exit %d\n%s\n%s", code, out, stderr)
	}
	env := map[string]string{"SLURM_JOB_ID": "8", "SLURM_JOB_USER": "carol", "SLURM_JOB_GPUS": "0"}
	code, _, stderr = mainRun("prolog", env, "--root", h.root, "--gpu-backend", "mock:dgxh100", "--config", h.cfg, "--state-dir", h.spool)
	if code != 1 || !strings.Contains(stderr, "gpuprep-prolog: health: XID79 reboot: GPU 0 (0000:18:00.0): Xid 79 not cleared (1 time; ") {
		t.Fatalf("the prolog while Xid 79 stands: %d %s", code, stderr)
	}
	h.kmsg("4,2,9000000,-;NVRM: GPU 0000:18:00.0: GPU recovered after reset")
	code, out, _ = h.health()
	if code != cli.ExitMismatch || !strings.Contains(out, "Xid 79 not cleared") {
		t.Fatalf("standing Xid: exit %d\n%s", code, out)
	}
	if code, out, stderr := h.health("--clear", "0000:18:00.0", "--reason", "GPU reset by hand"); code != 0 || !strings.Contains(out, "cleared GPU 0 (0000:18:00.0): Xid 79 (by ") {
		t.Fatalf("--clear: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, _ = h.health(); code != cli.ExitOK {
		t.Fatalf("after --clear: exit %d\n%s", code, out)
	}
	prom, err := os.ReadFile(filepath.Join(h.metrics, "gpuprep-health.prom"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(prom), `gpuprep_xid_events_total{hook="health",code="79",severity="fatal",Hostname=`) ||
		!strings.Contains(string(prom), `gpu="0",UUID="GPU-`) || !strings.Contains(string(prom), `pci_bus_id="00000000:18:00.0"} 1`+"\n") {
		t.Errorf("gpuprep-health.prom:\n%s", prom)
	}
	if strings.Contains(string(prom), "gpuprep_node_drained{") {
		t.Errorf("--no-drain reported a drain state it never asked for:\n%s", prom)
	}
}

// TestHealthProgramOneAtATime: while another gpuprep-health holds its
// lock, a second one exits 0 at once and reads nothing (the Xid stays for
// the running one).
func TestHealthProgramOneAtATime(t *testing.T) {
	h := newHealthRunner(t)
	sp, err := state.Open(h.spool)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	unlock, err := sp.TryLock(HealthCheckLock)
	if err != nil {
		t.Fatal(err)
	}
	h.kmsg("4,1,5000000,-;NVRM: Xid (PCI:0000:18:00): 79, pid=4242, name=python, GPU has fallen off the bus.")
	if code, out, stderr := h.health(); code != cli.ExitOK || out != "" {
		t.Fatalf("second run: exit %d\n%s\n%s", code, out, stderr)
	}
	unlock()
	if code, _, _ := h.health(); code != cli.ExitMismatch {
		t.Fatalf("the Xid was lost to the run that stopped: exit %d", code)
	}
}

// TestHealthProgramDryRunWritesNothing: --dry-run creates no spool and no
// metrics, and says what it would do.
func TestHealthProgramDryRunWritesNothing(t *testing.T) {
	h := newHealthRunner(t)
	h.kmsg("4,1,5000000,-;NVRM: Xid (PCI:0000:18:00): 79, pid=4242, name=python, GPU has fallen off the bus.")
	code, out, _ := h.health("--dry-run")
	if code != cli.ExitMismatch || !strings.Contains(out, "xid") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if _, err := os.Stat(h.spool); !os.IsNotExist(err) {
		t.Error("--dry-run created the spool")
	}
	if ents, _ := os.ReadDir(h.metrics); len(ents) != 0 {
		t.Errorf("--dry-run wrote metrics: %v", ents)
	}
}

// TestHealthProgramExternalOnlyWhenIdle: [health] external_command (a
// dcgmi diag) runs from gpuprep-health only while no job holds the node,
// and its failure is a fatal health failure like the epilog's.
func TestHealthProgramExternalOnlyWhenIdle(t *testing.T) {
	h := newHealthRunner(t)
	ran := filepath.Join(t.TempDir(), "ran")
	cfg, _ := os.ReadFile(h.cfg)
	os.WriteFile(h.cfg, append(cfg, []byte("[health]\nexternal_command = [\"/bin/sh\", \"-c\", \"echo run >> "+ran+"; exit 3\"]\n")...), 0o644)
	count := func() int { b, _ := os.ReadFile(ran); return strings.Count(string(b), "run\n") }

	code, out, _ := h.health()
	if count() != 1 || code != cli.ExitMismatch || !strings.Contains(out, "external        node                  fail (fatal)") {
		t.Fatalf("idle: ran %d times, exit %d\n%s", count(), code, out)
	}
	env := map[string]string{"SLURM_JOB_ID": "8", "SLURM_JOB_USER": "carol", "SLURM_JOB_GPUS": "0"}
	if code, _, stderr := mainRun("prolog", env, "--root", h.root, "--gpu-backend", "mock:dgxh100", "--config", h.cfg, "--state-dir", h.spool); code != 0 {
		t.Fatalf("prolog: %d %s", code, stderr)
	}
	code, out, _ = h.health()
	if count() != 1 || code != cli.ExitOK {
		t.Fatalf("busy (job 8 holds the node): the external check ran %d times, exit %d\n%s", count(), code, out)
	}
}

// Every series gpuprep-health and the hooks write names the node by its
// Slurm name (--node, SLURMD_NODENAME), which differs from the host name
// here, and by the host name.
func TestMetricsNameTheSlurmNode(t *testing.T) {
	h := newHealthRunner(t)
	if code, out, stderr := h.health("--node", "node-a17"); code != cli.ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	env := map[string]string{"SLURM_JOB_ID": "8", "SLURM_JOB_USER": "carol", "SLURM_JOB_GPUS": "0", "SLURMD_NODENAME": "node-a17"}
	if code, _, stderr := mainRun("prolog", env, "--root", h.root, "--gpu-backend", "mock:dgxh100", "--config", h.cfg, "--state-dir", h.spool); code != 0 {
		t.Fatalf("prolog: %d %s", code, stderr)
	}
	host, _ := os.Hostname()
	for _, file := range []string{"gpuprep-health.prom", "gpuprep-prolog.prom"} {
		prom, err := os.ReadFile(filepath.Join(h.metrics, file))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, line := range strings.Split(strings.TrimSpace(string(prom)), "\n") {
			if strings.HasPrefix(line, "#") {
				continue
			}
			n++
			if !strings.Contains(line, `slurm_node="node-a17"`) || !strings.Contains(line, `Hostname="`+host+`"`) {
				t.Errorf("%s: %s", file, line)
			}
		}
		if n < 5 {
			t.Errorf("%s: %d samples:\n%s", file, n, prom)
		}
	}
}
