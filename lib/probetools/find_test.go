package probetools

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestFind(t *testing.T) {
	root := t.TempDir()
	dir := func(n string) string { return filepath.Join(root, n) }

	// a: a dcgmi that is not executable, and an ib_write_bw that is a
	// directory: both skipped.
	if err := os.MkdirAll(filepath.Join(dir("a"), IBWriteBW), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir("a"), DCGMI), []byte("#!/bin/sh\necho 'dcgmi  version: 9.9.9'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// b: a broken symlink named all_reduce_perf (skipped), the real
	// dcgmi (TCLAP's --version output) and ib_write_bw (perftest's, exit 1).
	fake(t, dir("b"), DCGMI, `[ "$1" = --version ] && printf '\ndcgmi  version: 3.3.9\n\n'`)
	fake(t, dir("b"), IBWriteBW, `[ "$1" = --version ] && echo 'Version: 6.29'; exit 1`)
	if err := os.Symlink(filepath.Join(root, "nowhere"), filepath.Join(dir("b"), AllReducePerf)); err != nil {
		t.Fatal(err)
	}
	// c: all_reduce_perf, a symlink to an executable outside the path.
	real := fake(t, dir("build"), AllReducePerf, `echo '# nccl-tests version 2.17.6'`)
	if err := os.MkdirAll(dir("c"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(dir("c"), AllReducePerf)); err != nil {
		t.Fatal(err)
	}

	path := "relative/bin::" + dir("a") + ":" + dir("b") + ":" + dir("c") + ":" + dir("b")
	got := Find(path)
	want := []Tool{
		{Name: DCGMI, Path: filepath.Join(dir("b"), DCGMI), Version: "3.3.9"},
		{Name: AllReducePerf, Path: filepath.Join(dir("c"), AllReducePerf)},
		{Name: IBWriteBW, Path: filepath.Join(dir("b"), IBWriteBW), Version: "6.29"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Find:\n got %+v\nwant %+v", got, want)
	}
	if got := Find(dir("a")); len(got) != 0 {
		t.Errorf("Find of a directory with no executable tools: %+v", got)
	}
}

// dcgmi -v when --version says nothing: DcgmBuildInfo's "Version : X".
func TestFindDCGMVersionFallback(t *testing.T) {
	d := t.TempDir()
	fake(t, d, DCGMI, `case "$1" in
-v) printf '\nLocal build info:\nVersion : 4.2.3\nBuild ID : 7\nBuild Date : 2025-06-17\n' ;;
*) echo "ERROR: Invalid subsystem." ; exit 1 ;;
esac`)
	got := Find(d)
	if len(got) != 1 || got[0].Version != "4.2.3" {
		t.Errorf("Find: %+v, want dcgmi 4.2.3", got)
	}
}

func TestSearchDirs(t *testing.T) {
	got := searchDirs(":.:bin:/usr/bin:/usr/bin/:/opt//x:/usr/bin")
	want := []string{"/usr/bin", "/opt/x"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("searchDirs: %q, want %q", got, want)
	}
}
