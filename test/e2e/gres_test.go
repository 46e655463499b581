package e2e

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gpuprep/internal/testroot"
	"gpuprep/lib/cpuset"
	"gpuprep/lib/gresconf"
	"gpuprep/lib/textfmt"
	"gpuprep/test/slurmharness"
)

// TestGeneratedGresAcceptedBySlurm: what gpuprep-gres prints for a simulated
// node, with its device files made by mknod, is accepted by the real slurmd;
// Slurm reports the same GPUs, types, cores and links; the node line
// registers; and a job asking for two GPUs gets two.
func TestGeneratedGresAcceptedBySlurm(t *testing.T) {
	cases := []struct {
		name, shape, backend string
		gpus                 int
		mig                  bool
		nodeNameLines        bool // --node-name-lines: every line NodeName=<node>
	}{
		{"dgxh100", "dgxh100", "mock:dgxh100", 8, false, false},
		{"dgxa100", "dgxa100", "mock:dgxa100", 9, true, false}, // 7 whole GPUs + 2 MIG devices of GPU 0
		{"dgxh100-node-name-lines", "dgxh100", "mock:dgxh100", 8, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := testroot.Shared(t, tc.shape)
			args := []string{"--root", root, "--gpu-backend", tc.backend}
			gresArgs := args
			host := "any"
			if tc.nodeNameLines {
				// The lines must name the harness's node (the short host
				// name); another node's lines, as in a shared gres.conf,
				// follow and are ignored.
				h, _ := os.Hostname()
				host, _, _ = strings.Cut(h, ".")
				args = append(args, "--node-name", host)
				gresArgs = append(append([]string{}, args...), "--node-name-lines")
			}
			gres, stderr, code := runBin(t, "gpuprep-gres", gresArgs...)
			if tc.nodeNameLines {
				gres += strings.ReplaceAll(gres, "NodeName="+host+" ", "NodeName=othernode ")
			}
			if code != 0 {
				t.Fatalf("gpuprep-gres exit %d: %s", code, stderr)
			}
			nodeLine, stderr, code := runBin(t, "gpuprep-gres", append(args, "--format", "slurm")...)
			if code != 0 {
				t.Fatalf("gpuprep-gres --format slurm exit %d: %s", code, stderr)
			}
			want, err := gresconf.Parse("generated", []byte(gres))
			if err != nil {
				t.Fatalf("generated gres.conf does not parse: %v\n%s", err, gres)
			}
			if tc.nodeNameLines {
				if !strings.Contains(gres, "NodeName="+host+" AutoDetect=off\n") {
					t.Fatalf("no node-local AutoDetect=off:\n%s", gres)
				}
			}
			wantDevs := want.ForNode(host)
			if len(wantDevs) != tc.gpus {
				t.Fatalf("generated %d records, want %d:\n%s", len(wantDevs), tc.gpus, gres)
			}

			// Device files: /dev/nvidia<N> and /dev/nvidia-caps/... move
			// into a temp folder of mknod'ed character devices.
			devDir := t.TempDir()
			var gpuMinors, capMinors []int
			for _, m := range regexp.MustCompile(`/dev/nvidia(\d+)\b`).FindAllStringSubmatch(gres, -1) {
				n, _ := strconv.Atoi(m[1])
				gpuMinors = appendNew(gpuMinors, n)
			}
			for _, m := range regexp.MustCompile(`nvidia-cap(\d+)`).FindAllStringSubmatch(gres, -1) {
				n, _ := strconv.Atoi(m[1])
				capMinors = appendNew(capMinors, n)
			}
			slurmharness.MakeDevices(t, devDir, gpuMinors)
			if tc.mig {
				slurmharness.MakeCapDevices(t, devDir, capMinors)
			}
			gresHere := strings.ReplaceAll(gres, "/dev/", devDir+"/")

			opts := slurmharness.Options{NodeLine: firstNonComment(nodeLine), GresConf: gresHere}
			if strings.Contains(nodeLine, "needs SlurmdParameters=numa_node_as_socket") {
				// numa_as_socket = "auto" on an NPS4 node: do as the comment says.
				opts.SlurmdParameters = []string{"numa_node_as_socket"}
			}
			c := slurmharness.Start(t, opts)
			out, err := c.SlurmdG()
			if err != nil {
				t.Fatalf("slurmd -G: %v\n%s", err, out)
			}
			got, err := slurmharness.ParseSlurmdG(out)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.gpus {
				t.Fatalf("slurmd -G lists %d GPUs, want %d:\n%s", len(got), tc.gpus, out)
			}
			byFile := map[string]slurmharness.GresLine{}
			for _, g := range got {
				byFile[strings.ReplaceAll(g.File, devDir+"/", "/dev/")] = g
			}
			for _, w := range wantDevs {
				key := strings.Join(w.DeviceFiles(), ",")
				g, ok := byFile[key]
				if !ok {
					t.Errorf("slurmd -G has no record for %s:\n%s", key, out)
					continue
				}
				if g.Type != w.Type {
					t.Errorf("%s: slurmd Type=%s, generated %s", key, g.Type, w.Type)
				}
				cores, err := cpuset.Parse(g.Cores)
				if err != nil || !cores.Equal(w.Cores) {
					t.Errorf("%s: slurmd Cores=%s, generated %s", key, g.Cores, w.Cores)
				}
				if len(w.Links) > 0 && g.Links != textfmt.JoinInts(w.Links, ",") {
					t.Errorf("%s: slurmd Links=%s, generated %s", key, g.Links, textfmt.JoinInts(w.Links, ","))
				}
			}
			info, err := c.NodeInfo()
			if err != nil {
				t.Fatal(err)
			}
			if info["CPUTot"] != fieldOf(nodeLine, "CPUs") {
				t.Errorf("Slurm CPUTot=%s, node line CPUs=%s", info["CPUTot"], fieldOf(nodeLine, "CPUs"))
			}
			if !strings.Contains(info["Gres"], "gpu:") {
				t.Errorf("Slurm node Gres=%q", info["Gres"])
			}
			env := c.MustSrun("--gres=gpu:2", "sh", "-c", "echo $CUDA_VISIBLE_DEVICES")
			if n := len(strings.Split(strings.TrimSpace(env), ",")); n != 2 {
				t.Errorf("job with --gres=gpu:2 sees CUDA_VISIBLE_DEVICES=%q", strings.TrimSpace(env))
			}
		})
	}
}

func appendNew(s []int, v int) []int {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

func firstNonComment(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			return l
		}
	}
	return ""
}

func fieldOf(line, key string) string {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v
		}
	}
	return ""
}
