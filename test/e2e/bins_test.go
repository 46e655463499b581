package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"gpuprep/internal/testroot"
)

var (
	binsOnce sync.Once
	binsDir  string
	binsErr  error
)

// TestMain removes the programs bin built (some 32 MB) when the tests end.
func TestMain(m *testing.M) {
	code := m.Run()
	if binsDir != "" {
		os.RemoveAll(binsDir)
	}
	os.Exit(code)
}

// bin builds gpuprep's programs once per test run and returns the path of
// one (gpuprep-gres, gpuprep-health, gpuprep-prolog, gpuprep-epilog, srunwrap,
// rankprobe, nvidia-cuda-mps-control: the simulated one).
func bin(t *testing.T, name string) string {
	t.Helper()
	binsOnce.Do(func() {
		root, err := testroot.ModuleRoot()
		if err != nil {
			binsErr = err
			return
		}
		binsDir, binsErr = os.MkdirTemp("", "gpuprep-e2e-bin-")
		if binsErr != nil {
			return
		}
		pkgs := map[string]string{"gpuprep-gres": "./gres", "gpuprep-health": "./health", "gpuprep-prolog": "./prolog", "gpuprep-epilog": "./epilog", "srunwrap": "./srunwrap", "rankprobe": "./test/rankprobe",
			// The demo's simulated MPS control (make build's bin/sim/).
			"nvidia-cuda-mps-control": "./internal/mpssim/cmd/nvidia-cuda-mps-control"}
		for out, pkg := range pkgs {
			// The tests run the programs on simulated nodes: build them with the
			// go-nvml mock servers, which production builds leave out.
			cmd := exec.Command("go", "build", "-tags", "gpuprep_mock", "-o", filepath.Join(binsDir, out), pkg)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "CGO_CFLAGS=-Wno-deprecated-declarations")
			if b, err := cmd.CombinedOutput(); err != nil {
				binsErr = &buildError{pkg, err, string(b)}
				return
			}
		}
	})
	if binsErr != nil {
		t.Fatal(binsErr)
	}
	return filepath.Join(binsDir, name)
}

type buildError struct {
	pkg string
	err error
	out string
}

func (e *buildError) Error() string { return "go build " + e.pkg + ": " + e.err.Error() + "\n" + e.out }

// runBin runs one of gpuprep's programs and returns stdout, stderr and the
// exit code.
func runBin(t *testing.T, name string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin(t, name), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return out.String(), errb.String(), code
}

// Every program prints its usage on stdout and exits 0 for -h and --help;
// a bad flag is one line on stderr and exit 2.
func TestBinsHelp(t *testing.T) {
	for _, name := range []string{"gpuprep-gres", "gpuprep-prolog", "gpuprep-epilog", "gpuprep-health", "srunwrap"} {
		for _, arg := range []string{"-h", "--help"} {
			out, stderr, code := runBin(t, name, arg)
			if code != 0 || !strings.HasPrefix(out, "usage: "+name) || !strings.Contains(out, "--version") || stderr != "" {
				t.Errorf("%s %s: exit %d stdout %q stderr %q", name, arg, code, out, stderr)
			}
		}
		out, stderr, code := runBin(t, name, "--no-such-flag")
		if code != 2 || out != "" || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%s --no-such-flag: exit %d stdout %q stderr %q", name, code, out, stderr)
		}
	}
}

// A production build (no -tags gpuprep_mock, as make build and make install
// make them) carries no mock GPU server: no symbol of internal/gpumock, of
// go-nvml's mock packages or of the simulated node shapes; and it says how
// to get them when asked for one.
func TestProductionBinariesHoldNoMock(t *testing.T) {
	root, err := testroot.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, pkg := range []string{"prolog", "epilog", "gres", "health", "srunwrap"} {
		out := filepath.Join(dir, pkg)
		cmd := exec.Command("go", "build", "-o", out, "./"+pkg)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_CFLAGS=-Wno-deprecated-declarations")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build ./%s: %v\n%s", pkg, err, b)
		}
		syms, err := exec.Command("go", "tool", "nm", out).Output()
		if err != nil {
			t.Fatalf("go tool nm %s: %v", pkg, err)
		}
		if len(syms) < 1000 {
			t.Fatalf("go tool nm %s: only %d bytes of symbols", pkg, len(syms))
		}
		for _, line := range strings.Split(string(syms), "\n") {
			for _, bad := range []string{"gpuprep/internal/gpumock", "go-nvml/pkg/nvml/mock", "gpuprep/internal/nodeshape"} {
				if strings.Contains(line, bad) {
					t.Errorf("%s holds %s: %s", pkg, bad, line)
					break
				}
			}
		}
	}
	gres := filepath.Join(dir, "gres")
	out, err := exec.Command(gres, "--root", t.TempDir(), "--gpu-backend", "mock:dgxh100").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "-tags gpuprep_mock") {
		t.Errorf("production gres with a mock backend: %v\n%s", err, out)
	}
}

// examples/demo.sh (make demo) runs on the simulated node and prints no
// colour when its output is not a terminal, nor with NO_COLOR set.
func TestBinsDemoPlain(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole demo")
	}
	root, err := testroot.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(bin(t, "gpuprep-gres"))
	cmd := exec.Command("bash", filepath.Join(root, "examples", "demo.sh"))
	cmd.Env = append(os.Environ(), "BIN="+dir, "TERM=xterm")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo.sh: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "== Whoever is on call") || strings.Contains(string(out), "\x1b") {
		t.Errorf("demo.sh output piped: no headings, or colour:\n%s", out)
	}
}
