package slurmcores

import (
	"strings"
	"testing"

	"gpuprep/internal/testroot"
)

// TestParseSlurmdG reads `slurmd -G` as 22.05 ("slurmd: " prefix, "(null)"
// for no Links=), 24.11 (Flags=) and 26.05 ("[timestamp] " prefix) print it.
func TestParseSlurmdG(t *testing.T) {
	out := `slurmd: WARNING: A line in gres.conf for GRES gpu:h100 has 1 more configured than expected in slurm.conf. Ignoring extra GRES.
slurmd: Gres Name=gpu Type=(null) Count=1 Index=0 ID=7696487 File=/d/nvidia0 Cores=0 CoreCnt=2 Links=-1,4,4,4
slurmd: Gres Name=gpu Type=1g.10gb Count=1 Index=22 ID=7696487 File=/d/nvidia0,/d/nvidia-caps/nvidia-cap21,/d/nvidia-caps/nvidia-cap22 Cores=0-55 CoreCnt=224 (null)
slurmd: Gres Name=gpu Type=h100 Count=1 Index=3 ID=7696487 File=/d/nvidia3 Cores=0-55 CoreCnt=224 Links=18,-1 Flags=HAS_FILE,HAS_TYPE,ENV_NVML
[2026-12-02T13:23:37.463] Gres Name=gpu Type=h100 Count=4 Index=4 ID=7696487 File=/d/nvidia[4-7] Cores=56-111 CoreCnt=224 Links=(null) Flags=HAS_FILE
[2026-12-02T13:23:37.463] debug:  gpu/generic: fini: fini: unloading GPU Generic plugin
`
	gs, err := ParseSlurmdG(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 4 {
		t.Fatalf("%d records: %+v", len(gs), gs)
	}
	if g := gs[0]; g.Name != "gpu" || g.Type != "" || g.Count != 1 || g.File != "/d/nvidia0" || g.Cores != "0" || g.CoreCnt != 2 || g.Links != "-1,4,4,4" || g.Flags != "" {
		t.Errorf("22.05 record: %+v", g)
	}
	if g := gs[1]; g.Index != 22 || g.Links != "" || !strings.HasSuffix(g.File, "nvidia-cap22") || !strings.HasPrefix(g.Line, "Gres Name=gpu Type=1g.10gb") {
		t.Errorf("22.05 MIG record: %+v", g)
	}
	if g := gs[2]; g.Type != "h100" || g.Links != "18,-1" || g.Flags != "HAS_FILE,HAS_TYPE,ENV_NVML" {
		t.Errorf("24.11 record: %+v", g)
	}
	if g := gs[3]; g.Count != 4 || g.File != "/d/nvidia[4-7]" || g.Links != "" || g.Cores != "56-111" {
		t.Errorf("26.05 record: %+v", g)
	}
	if _, err := ParseSlurmdG("slurmd: Gres Name=gpu Count=x"); err == nil {
		t.Error("bad Count accepted")
	}
}

func TestOracleNodeLine(t *testing.T) {
	node, line, err := oracleNodeLine("# needs SlurmdParameters=numa_node_as_socket in slurm.conf\nNodeName=n1 NodeAddr=10.0.0.1 CPUs=4 Gres=gpu:2\n")
	if err != nil || node != "n1" || line != "NodeName=n1 CPUs=4 Gres=gpu:2 NodeAddr=127.0.0.1" {
		t.Errorf("%q %q %v", node, line, err)
	}
	for _, bad := range []string{"", "# only a comment\n", "CPUs=4 NodeName=n1"} {
		if _, _, err := oracleNodeLine(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestMakeDevicesRefuses: a device file makeDevices cannot make (a range,
// another device) is an error naming it and its line, before any mknod.
func TestMakeDevicesRefuses(t *testing.T) {
	for _, gres := range []string{
		"Name=gpu File=/dev/nvidia[0-1]",
		"# /dev/nvidia0 in a comment is left alone\nName=gpu File=/dev/dri/card0",
	} {
		_, err := makeDevices(gres, t.TempDir(), "/gpuprep-work")
		if err == nil || !strings.Contains(err.Error(), "not a /dev/nvidia<N>") || !strings.Contains(err.Error(), "line ") {
			t.Errorf("%q: %v", gres, err)
		}
	}
}

// TestSlurmdGresFindsMistakes: the oracle sees what a wrong gres.conf does
// to slurmd, in every release: a record more than the node line's Gres=
// count, a Type= the node line does not name, Cores= beyond the node's
// cores and Links= without -1 each give a message; a right one none.
func TestSlurmdGresFindsMistakes(t *testing.T) {
	RequireSlurmdGres(t)
	root := testroot.Shared(t, "h200x2") // 1 socket of 32 cores, 1 thread each
	const node = "NodeName=n CPUs=32 Sockets=1 CoresPerSocket=32 ThreadsPerCore=1 "
	two := "Name=gpu Type=h200 File=/dev/nvidia0 Cores=0-31 Links=-1,2\nName=gpu Type=h200 File=/dev/nvidia1 Cores=0-31 Links=2,-1\n"
	cases := []struct {
		name, line, gres, message string
		gpus                      int
	}{
		{"right", "Gres=gpu:h200:2", "AutoDetect=off\n# /dev/nvidia9 in a comment\n" + two, "", 2},
		{"count", "Gres=gpu:h200:1", two, "1 more configured than expected in slurm.conf", 1},
		{"type", "Gres=gpu:h100:2", two, "more configured than expected in slurm.conf", 0},
		{"cores", "Gres=gpu:h200:2", strings.Replace(two, "Cores=0-31", "Cores=0-63", 1), "Invalid GRES data for gpu, Cores=0-63", 2},
		{"links", "Gres=gpu:h200:2", strings.Replace(two, "Links=2,-1", "Links=2,2", 1), "Ignoring invalid Links=2,2", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, err := SlurmdGres(GresInput{Root: root, NodeLine: node + c.line, GresConf: c.gres})
			if err != nil {
				t.Fatal(err)
			}
			if len(v.GPUs) != c.gpus {
				t.Errorf("%d GPUs, want %d: %+v", len(v.GPUs), c.gpus, v.GPUs)
			}
			all := strings.Join(v.Messages, "\n")
			if c.message == "" && all != "" || !strings.Contains(all, c.message) {
				t.Errorf("messages %q, want one with %q\n%s", v.Messages, c.message, v.Log)
			}
			for _, g := range v.GPUs {
				if !strings.HasPrefix(g.File, "/dev/nvidia") {
					t.Errorf("File=%s: not the /dev path of gres.conf", g.File)
				}
			}
		})
	}
}
