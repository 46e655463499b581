package glibcfloor

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gpuprep/internal/testroot"
)

// result is what one run of a program showed: exit status and output.
type result struct {
	code           int
	stdout, stderr string
}

// durations and logTimes differ from run to run ("85.5 ms", slog's time=).
var (
	durations = regexp.MustCompile(`\b[0-9]+(\.[0-9]+)? ?(ns|µs|us|ms|s)\b`)
	logTimes  = regexp.MustCompile(`time=[^ ]+ `)
)

// run runs bin with args and env added to this process's environment.
func run(t *testing.T, bin string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("running %s: %v", bin, err)
	}
	norm := func(s string) string { return durations.ReplaceAllString(logTimes.ReplaceAllString(s, ""), "<dur>") }
	r.stdout, r.stderr = norm(r.stdout), norm(r.stderr)
	return r
}

// same runs the EL8 and the reference build with the same arguments and
// fails unless exit status, stdout and stderr are identical (timings
// aside). It returns the EL8 build's result.
func same(t *testing.T, el8, ref string, env []string, args ...string) result {
	t.Helper()
	a, b := run(t, el8, env, args...), run(t, ref, env, args...)
	if a != b {
		t.Errorf("%s %s: the EL8 build and the ordinary build differ\nEL8 (exit %d):\n%s%s\nordinary (exit %d):\n%s%s",
			filepath.Base(el8), strings.Join(args, " "), a.code, a.stdout, a.stderr, b.code, b.stdout, b.stderr)
	}
	return a
}

// TestEL8BehavesLikeNormalBuild runs each EL8 program and the same program
// built the ordinary way (same -ldflags and -trimpath) on the simulated DGX
// H100 node and wants the same results.
func TestEL8BehavesLikeNormalBuild(t *testing.T) {
	root := testroot.Unpack(t, "dgxh100")
	// An empty configuration file: built-in defaults whatever this
	// machine's /etc/gpuprep holds.
	cfg := filepath.Join(t.TempDir(), "gpuprep.toml")
	if err := os.WriteFile(cfg, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("gres", func(t *testing.T) {
		el8, ref := pairBins(t, "gpuprep-gres")
		same(t, el8, ref, nil, "--version")
		same(t, el8, ref, nil, "--root", root, "--gpu-backend", "procfs", "--format", "table")
		same(t, el8, ref, nil, "--root", root, "--gpu-backend", "procfs", "--format", "slurm")
		same(t, el8, ref, nil, "--root", root, "--gpu-backend", "none")
		conf := same(t, el8, ref, nil, "--root", root, "--gpu-backend", "procfs")
		if conf.code != 0 || !strings.Contains(conf.stdout, "Name=gpu") {
			t.Fatalf("gpuprep-gres wrote no gres.conf for the simulated node (exit %d):\n%s%s", conf.code, conf.stdout, conf.stderr)
		}
		// The prolog maps SLURM_JOB_GPUS through the node's gres.conf.
		if err := os.MkdirAll(filepath.Join(root, "etc", "slurm"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "etc", "slurm", "gres.conf"), []byte(conf.stdout), 0o644); err != nil {
			t.Fatal(err)
		}
		same(t, el8, ref, nil, "--root", root, "--gpu-backend", "procfs", "--check", filepath.Join(root, "etc", "slurm", "gres.conf"))
	})

	for _, p := range []string{"prolog", "epilog"} {
		t.Run(p, func(t *testing.T) {
			el8, ref := pairBins(t, "gpuprep-"+p)
			same(t, el8, ref, nil, "--version")
			r := same(t, el8, ref, nil, "--config", cfg, "--root", root, "--gpu-backend", "procfs",
				"--state-dir", filepath.Join(t.TempDir(), "spool"),
				"--dry-run", "--job-id", "42", "--job-user", "alice", "--job-gpus", "0,1")
			if r.code != 0 || !strings.Contains(r.stdout, "dry run") {
				t.Errorf("gpuprep-%s --dry-run on the simulated node: exit %d, want 0 and a plan:\n%s%s", p, r.code, r.stdout, r.stderr)
			}
			same(t, el8, ref, nil, "--config", cfg, "--root", root, "--gpu-backend", "procfs", "--health")
		})
	}
}

// TestEL8ResolvesNVMLAtRunTime checks go-nvml's scheme survives the EL8
// link: its nvml* functions stay undefined in the program, with no
// libnvidia-ml.so.1 among its needed libraries, and are bound lazily to the
// library go-nvml dlopens at run time. Without the library the program must
// start and say NVML is missing, as the ordinary build does; with a stand-in
// libnvidia-ml.so.1 (NVML answering, no GPU) both builds must see NVML.
func TestEL8ResolvesNVMLAtRunTime(t *testing.T) {
	t.Run("symbols", func(t *testing.T) {
		for _, p := range el8Programs {
			checkNVMLSymbols(t, el8Bin(t, p))
		}
	})
	el8, ref := pairBins(t, "gpuprep-gres")

	t.Run("no-driver", func(t *testing.T) {
		if p, ok := systemNVML(); ok {
			t.Skipf("this machine has an NVIDIA driver (%s): nothing to compare for a missing NVML", p)
		}
		r := same(t, el8, ref, nil, "--gpu-backend", "nvml")
		if r.code == 0 || !strings.Contains(r.stderr, "libnvidia-ml.so.1 not found") {
			t.Errorf("bin/el8/gpuprep-gres --gpu-backend nvml without a driver: exit %d, stderr %q; want a failure naming libnvidia-ml.so.1", r.code, r.stderr)
		}
	})

	t.Run("stand-in-library", func(t *testing.T) {
		lib := fakeNVML(t)
		env := []string{"LD_LIBRARY_PATH=" + lib}
		root := testroot.Unpack(t, "dgxh100")
		r := same(t, el8, ref, env, "--root", root, "--gpu-backend", "nvml")
		// NVML initialised through the stand-in and listed no GPU, while
		// the simulated PCI bus has eight.
		if !strings.Contains(r.stderr, "nvml backend lists none") {
			t.Errorf("bin/el8/gpuprep-gres with the stand-in libnvidia-ml.so.1: exit %d, stderr %q; want NVML to answer with no GPU", r.code, r.stderr)
		}
	})
}

// systemNVML reports where this machine's libnvidia-ml.so.1 is, if the
// dynamic loader's cache (ldconfig -p) lists one.
func systemNVML() (string, bool) {
	out, err := exec.Command("/sbin/ldconfig", "-p").Output()
	if err != nil {
		return "", false
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "libnvidia-ml.so.1 ") {
			return strings.TrimSpace(l), true
		}
	}
	return "", false
}
