package main

import (
	"os"
	"path/filepath"
	"testing"

	"gpuprep/internal/testroot"
	"gpuprep/internal/topom"
)

// TestCapturedNodes checks every fixture root captured from a real node
// (test/roots/<name>.tar.gz with test/roots/<name>-ref/topo-m.txt, as
// test/gpunode/run.sh leaves them) against that node's own nvidia-smi
// topo -m: gpuprep-gres on the capture (procfs: the capture has no NVML),
// gpuprep-gres with the node's NVML when the run kept gres-nvml.json, and
// srunwrap --explain for one and two ranks per GPU. A new capture is
// checked by adding its two files, nothing else.
func TestCapturedNodes(t *testing.T) {
	mod, err := testroot.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, name := range testroot.Names() {
		ref := filepath.Join(mod, "test/roots", name+"-ref")
		topo := filepath.Join(ref, "topo-m.txt")
		if _, err := os.Stat(topo); err != nil {
			continue
		}
		found++
		t.Run(name, func(t *testing.T) {
			root := testroot.Shared(t, name)
			check := func(what string, args ...string) {
				t.Helper()
				code, out, errs := topocheck(args...)
				if code != 0 {
					t.Errorf("%s: exit %d\n%s%s", what, code, out, errs)
				}
			}
			gres := gresJSON(t, root, "procfs")
			check("gres (procfs, the capture)", "gres", "--topo", topo, "--gres", gres)
			if nvml := filepath.Join(ref, "gres-nvml.json"); exists(nvml) {
				check("gres (NVML, on the node)", "gres", "--topo", topo, "--gres", nvml)
			}
			m, err := topom.Parse([]byte(readFile(t, topo)))
			if err != nil {
				t.Fatal(err)
			}
			gpus := len(m.GPUs)
			for _, per := range []int{1, 2} {
				check("explain", "ranks", "--topo", topo, "--explain", explainJSON(t, root, per*gpus), "--gres", gres)
			}
		})
	}
	if found == 0 {
		t.Fatal("no captured root with a -ref/topo-m.txt in test/roots")
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
