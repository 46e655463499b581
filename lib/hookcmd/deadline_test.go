package hookcmd

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"gpuprep/internal/testroot"
)

// TestDeadlineIsLogged: a prolog stuck in the kernel (here: cpu/online is a
// FIFO nobody writes) ends at general.deadline with exit 1, one stderr line,
// and the same reason in the log file (and so in syslog), as any failure.
func TestDeadlineIsLogged(t *testing.T) {
	root := testroot.Unpack(t, "h200x2")
	online := filepath.Join(root, "sys/devices/system/cpu/online")
	os.Remove(online)
	if err := syscall.Mkfifo(online, 0o644); err != nil {
		t.Fatal(err)
	}
	// Let the stuck open return once the test is over.
	t.Cleanup(func() {
		if fd, err := syscall.Open(online, syscall.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			syscall.Close(fd)
		}
	})
	dir := t.TempDir()
	logFile := filepath.Join(dir, "gpuprep.log")
	conf := filepath.Join(dir, "g.toml")
	os.WriteFile(conf, []byte("[general]\ndeadline = \"300ms\"\nmetrics_dir = \"\"\nlog_file = \""+logFile+"\"\n"), 0o644)
	env := map[string]string{"SLURM_JOB_ID": "7", "SLURM_SCRIPT_CONTEXT": "prolog_slurmd"}
	code, _, stderr := mainRun("prolog", env, "--root", root, "--gpu-backend", "procfs", "--config", conf, "--state-dir", filepath.Join(dir, "spool"))
	want := "gpuprep-prolog: deadline of 300ms passed (config general.deadline)\n"
	if code != 1 || stderr != want {
		t.Errorf("exit %d, stderr %q; want 1, %q", code, stderr, want)
	}
	b, _ := os.ReadFile(logFile)
	if !strings.Contains(string(b), "prolog failed") || !strings.Contains(string(b), "deadline of 300ms passed") {
		t.Errorf("log file does not hold the deadline:\n%s", b)
	}
}
