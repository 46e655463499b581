package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"gpuprep/internal/testroot"
)

var (
	binsOnce sync.Once
	binsDir  string
	binsErr  error
)

// bin builds gpuprep's programs once per test run and returns the path of
// one (gpuprep-gres, gpuprep-prolog, gpuprep-epilog, srunwrap).
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
		pkgs := map[string]string{"gpuprep-gres": "./gres", "gpuprep-prolog": "./prolog", "gpuprep-epilog": "./epilog", "srunwrap": "./srunwrap"}
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
