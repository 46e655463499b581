package glibcfloor

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// checkNVMLSymbols checks the ELF side of go-nvml's scheme (pkg/nvml links
// with -Wl,--unresolved-symbols=ignore-in-object-files, then dlopens
// libnvidia-ml.so.1 with RTLD_GLOBAL): every nvml* function the program
// calls is an undefined global dynamic symbol, no library provides it at
// link time (no DT_NEEDED libnvidia-ml), and binding is lazy (no BIND_NOW),
// or the loader would refuse to start the program on a node without the
// NVIDIA driver.
func checkNVMLSymbols(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatalf("%s: dynamic symbols: %v", path, err)
	}
	undef := 0
	for _, s := range syms {
		if !strings.HasPrefix(s.Name, "nvml") {
			continue
		}
		if s.Section != elf.SHN_UNDEF || elf.ST_BIND(s.Info) != elf.STB_GLOBAL {
			t.Errorf("%s: dynamic symbol %s is defined or not global (section %v, binding %v); go-nvml wants it undefined, bound at run time",
				path, s.Name, s.Section, elf.ST_BIND(s.Info))
			continue
		}
		if s.Version != "" {
			t.Errorf("%s: %s is bound to version %s@%s; go-nvml's symbols carry no version", path, s.Name, s.Version, s.Library)
		}
		undef++
	}
	if undef < 100 {
		t.Errorf("%s: %d undefined nvml* dynamic symbols; go-nvml's binding has some 400", path, undef)
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range libs {
		if strings.Contains(l, "nvidia-ml") {
			t.Errorf("%s: DT_NEEDED %s: the program would not start without the NVIDIA driver", path, l)
		}
	}
	if v, _ := f.DynValue(elf.DT_FLAGS); len(v) > 0 && v[0]&uint64(elf.DF_BIND_NOW) != 0 {
		t.Errorf("%s: DT_FLAGS has BIND_NOW: the unresolved nvml* symbols would stop it at start without the driver", path)
	}
	if v, _ := f.DynValue(elf.DT_FLAGS_1); len(v) > 0 && v[0]&uint64(elf.DF_1_NOW) != 0 {
		t.Errorf("%s: DT_FLAGS_1 has NOW: the unresolved nvml* symbols would stop it at start without the driver", path)
	}
	t.Logf("%s: %d undefined nvml* dynamic symbols, lazy binding, needs %v", path, undef, libs)
}

// fakeNVMLSource is a stand-in libnvidia-ml.so.1: NVML initialises, reports
// a driver version and no GPU.
const fakeNVMLSource = `#include <string.h>
int nvmlInit_v2(void) { return 0; }
int nvmlInitWithFlags(unsigned int flags) { return 0; }
int nvmlShutdown(void) { return 0; }
int nvmlDeviceGetCount_v2(unsigned int *n) { *n = 0; return 0; }
int nvmlSystemGetDriverVersion(char *v, unsigned int len) { strncpy(v, "999.99", len); return 0; }
const char *nvmlErrorString(int r) { return "stand-in NVML error"; }
`

// fakeNVML compiles the stand-in libnvidia-ml.so.1 with this machine's C
// compiler and returns its directory. Without a C compiler the test is
// skipped, except on CI (CI=true), where that is a failure.
func fakeNVML(t *testing.T) string {
	t.Helper()
	cc := ""
	for _, c := range []string{"cc", "gcc"} {
		if p, err := exec.LookPath(c); err == nil {
			cc = p
			break
		}
	}
	if cc == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no C compiler (cc, gcc) to build the stand-in libnvidia-ml.so.1 (Debian package gcc); CI=true makes this a failure")
		}
		t.Skip("no C compiler (cc, gcc) to build the stand-in libnvidia-ml.so.1 (Debian package gcc)")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "fake-nvml.c")
	if err := os.WriteFile(src, []byte(fakeNVMLSource), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(cc, "-shared", "-fPIC", "-Wl,-soname,libnvidia-ml.so.1",
		"-o", filepath.Join(dir, "libnvidia-ml.so.1"), src).CombinedOutput()
	if err != nil {
		t.Fatalf("building the stand-in libnvidia-ml.so.1: %v\n%s", err, out)
	}
	return dir
}
