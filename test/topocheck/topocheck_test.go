package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	_ "gpuprep/internal/gpumock" // --gpu-backend mock:<model> for gpuprep-gres
	"gpuprep/internal/testroot"
	"gpuprep/lib/cmdenv"
	"gpuprep/lib/grescmd"
	"gpuprep/lib/srunwrapcmd"
)

// noEnv is an environment outside any Slurm job: no SLURM_* variable.
func noEnv(string) string { return "" }

// gpuprep runs one of gpuprep's commands in-process and writes its stdout
// to a file of the test.
func gpuprep(t *testing.T, name string, main func(cmdenv.Env) int, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := main(cmdenv.Env{Args: args, Getenv: noEnv, Stdout: &out, Stderr: &errb}); code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errb.String())
	}
	return write(t, name, out.String())
}

func gresJSON(t *testing.T, root, backend string) string {
	return gpuprep(t, "gres.json", grescmd.Main, "--root", root, "--gpu-backend", backend, "--format", "json")
}

func explainJSON(t *testing.T, root string, tasks int) string {
	args := []string{"--explain", "--json", "--root", root}
	if tasks > 0 {
		args = append(args, "--tasks", strconv.Itoa(tasks))
	}
	return gpuprep(t, "explain.json", srunwrapcmd.Main, args...)
}

func write(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func topoFile(t *testing.T, shape string) string {
	t.Helper()
	if shape == "h200x2" { // the real node's output
		root, err := testroot.ModuleRoot()
		if err != nil {
			t.Fatal(err)
		}
		return filepath.Join(root, "test/roots/h200x2-ref/topo-m.txt")
	}
	return filepath.Join("testdata", shape+".topo-m.txt")
}

func topocheck(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(cmdenv.Env{Args: args, Getenv: noEnv, Stdout: &out, Stderr: &errb})
	return code, out.String(), errb.String()
}

// shapes: fixture root, GPU backend, the note gres mode must print.
var shapes = []struct{ root, backend, note string }{
	{"dgxh100", "mock:dgxh100", ""},
	{"dgxa100", "mock:dgxa100", "note: Links= not checked: gres.json has MIG devices"},
	{"snc2xeon", "procfs", "note: Links= not checked: the procfs GPU backend cannot see NVLinks"},
	{"h200x2", "procfs", "note: Links= not checked: the procfs GPU backend cannot see NVLinks"},
}

func TestGresAgreesWithTopo(t *testing.T) {
	for _, s := range shapes {
		t.Run(s.root, func(t *testing.T) {
			gres := gresJSON(t, testroot.Shared(t, s.root), s.backend)
			code, out, errs := topocheck("gres", "--topo", topoFile(t, s.root), "--gres", gres)
			if code != 0 || !strings.HasSuffix(out, "GPUs, all agree\n") || errs != "" {
				t.Fatalf("exit %d\n%s%s", code, out, errs)
			}
			if s.note != "" && !strings.Contains(out, s.note) || s.note == "" && strings.Contains(out, "note:") {
				t.Errorf("want note %q in\n%s", s.note, out)
			}
		})
	}
}

// The real 2x H200 node: gpuprep-gres on real NVML (its JSON captured
// there) against nvidia-smi topo -m captured beside it; Links= checked.
func TestGresCapturedNVML(t *testing.T) {
	root, err := testroot.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ := topocheck("gres", "--topo", topoFile(t, "h200x2"), "--gres", filepath.Join(root, "test/roots/h200x2-ref/gres-nvml.json"))
	if code != 0 || out != "topocheck gres: 2 GPUs, all agree\n" {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

// edit changes field col (0 = the row name) of GPU row gpu in a topo -m
// text whose cells are tab-separated.
func edit(t *testing.T, text string, gpu, col int, val string) string {
	t.Helper()
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		f := strings.Split(l, "\t")
		if f[0] == "GPU"+strconv.Itoa(gpu) {
			var keep []int // indexes of non-empty fields
			for k, v := range f {
				if v != "" {
					keep = append(keep, k)
				}
			}
			f[keep[col]] = val
			lines[i] = strings.Join(f, "\t")
			return strings.Join(lines, "\n")
		}
	}
	t.Fatalf("no row GPU%d", gpu)
	return ""
}

func TestGresMismatches(t *testing.T) {
	root := testroot.Shared(t, "dgxh100")
	gres := gresJSON(t, root, "mock:dgxh100")
	b, err := os.ReadFile(topoFile(t, "dgxh100"))
	if err != nil {
		t.Fatal(err)
	}
	orig := string(b)
	// dgxh100 topo -m columns: 8 GPUs, 9 NICs, CPU Affinity (18), NUMA Affinity (19).
	cases := []struct {
		name  string
		text  string
		lines []string
	}{
		{"cpu affinity", edit(t, orig, 5, 18, "56-110,168-223"), []string{
			"GPU 5: Cores=56-111 (CPUs 56-111,168-223), topo -m CPU Affinity 56-110,168-223",
			"GPU 5: node.gpus cpu_affinity 56-111,168-223, topo -m CPU Affinity 56-110,168-223",
		}},
		{"nvlink count", edit(t, orig, 2, 7, "NV12"), []string{
			"GPU 2: Links=18,18,-1,18,18,18,18,18 (18,18,-1,18,18,18,18,18 in GPU order), topo -m NV18 NV18 X NV18 NV18 NV18 NV12 NV18",
		}},
		{"no nvlink", edit(t, orig, 3, 1, "SYS"), []string{
			"GPU 3: Links=18,18,18,-1,18,18,18,18 (18,18,18,-1,18,18,18,18 in GPU order), topo -m SYS NV18 NV18 X NV18 NV18 NV18 NV18",
		}},
		{"swapped numa", edit(t, edit(t, orig, 0, 19, "1"), 4, 19, "0"), []string{
			"GPU 0: numa 0, topo -m NUMA Affinity 1",
			"GPU 4: numa 1, topo -m NUMA Affinity 0",
		}},
		// NIC k is field 9+k: mlx5_0 is under GPU 0's switch.
		{"nearest nic level", edit(t, orig, 0, 9, "PXB"), []string{"GPU 0: near_nics mlx5_0(PIX), topo -m's nearest mlx5_0(PXB)"}},
		{"a second nearest nic", edit(t, orig, 1, 9, "PIX"), []string{"GPU 1: near_nics mlx5_1(PIX), topo -m's nearest mlx5_0(PIX),mlx5_1(PIX)"}},
		{"numa N/A", edit(t, orig, 7, 19, "N/A"), []string{"GPU 7: numa 1, topo -m NUMA Affinity N/A"}},
		{"gpu numa id", edit(t, orig, 6, 20, "9"), []string{"GPU 6: memory_numa_nodes [], topo -m GPU NUMA ID 9"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, _ := topocheck("gres", "--topo", write(t, "topo-m.txt", c.text), "--gres", gres)
			want := strings.Join(c.lines, "\n") + "\ntopocheck gres: 8 GPUs, " + plural(len(c.lines), "mismatch", "mismatches") + "\n"
			if code != 1 || out != want {
				t.Errorf("exit %d, output\n%swant\n%s", code, out, want)
			}
		})
	}
	// The 2-GPU node's topo -m against the 8-GPU node's gres.json.
	code, out, _ := topocheck("gres", "--topo", topoFile(t, "h200x2"), "--gres", gres)
	if code != 1 || !strings.HasPrefix(out, "GPU count: topo -m has 2 GPUs, gres.json's devices cover 8 (gpu_index 0,1,2,3,4,5,6,7)\n") {
		t.Errorf("exit %d\n%s", code, out)
	}
}

func TestRanksAgreeWithTopo(t *testing.T) {
	for _, s := range shapes {
		root := testroot.Shared(t, s.root)
		gres := gresJSON(t, root, s.backend)
		for _, tasks := range []int{0, 16} {
			t.Run(s.root+"/"+strconv.Itoa(tasks), func(t *testing.T) {
				x := explainJSON(t, root, tasks)
				for _, extra := range [][]string{nil, {"--gres", gres}} {
					code, out, errs := topocheck(append([]string{"ranks", "--topo", topoFile(t, s.root), "--explain", x}, extra...)...)
					if code != 0 || !strings.HasPrefix(out, "topocheck ranks: ") || !strings.HasSuffix(out, "GPUs, all agree\n") {
						t.Fatalf("%v: exit %d\n%s%s", extra, code, out, errs)
					}
				}
			})
		}
	}
}

// mutate rewrites an explain JSON: f changes its ranks.
func mutate(t *testing.T, path string, f func(ranks []map[string]any)) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var x map[string]any
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatal(err)
	}
	var ranks []map[string]any
	for _, r := range x["ranks"].([]any) {
		ranks = append(ranks, r.(map[string]any))
	}
	f(ranks)
	out, _ := json.Marshal(x)
	return write(t, "explain.json", string(out))
}

func TestRanksMismatches(t *testing.T) {
	root := testroot.Shared(t, "dgxh100")
	gres := gresJSON(t, root, "mock:dgxh100")
	x := explainJSON(t, root, 8)
	topo := topoFile(t, "dgxh100")
	cases := []struct {
		name  string
		f     func(r []map[string]any)
		args  []string
		lines []string
	}{
		{"shared cpus", func(r []map[string]any) { r[3]["cpus"] = "40-55,154-167" }, nil, []string{
			"ranks 2 and 3 share CPUs 40-41",
		}},
		{"cpus off the gpu's numa node", func(r []map[string]any) { r[1]["cpus"] = "60-61,172-173" }, nil, []string{
			"rank 1: CPUs 60-61,172-173 (GPU 1), 60-61,172-173 outside topo -m CPU Affinity 0-55,112-167",
			"ranks 1 and 4 share CPUs 60-61,172-173",
		}},
		{"unbound", func(r []map[string]any) { r[6]["cpus"] = "" }, nil, []string{"rank 6: no CPUs (left unbound)"}},
		{"gpu twice", func(r []map[string]any) { r[7]["gpu"].(map[string]any)["index"] = 6 }, nil, []string{
			"rank 7: HCA mlx5_7:1 is NODE from GPU 6, topo -m's nearest (PIX): mlx5_6",
			"GPU 6: used by 2 ranks [6 7], want exactly one (8 ranks on 8 GPUs)",
			"GPU 7: used by 0 ranks [], want exactly one (8 ranks on 8 GPUs)",
		}},
		{"no gpu", func(r []map[string]any) { r[2]["gpu"] = nil }, nil, []string{
			"rank 2: no GPU",
			"GPU 2: used by 0 ranks [], want exactly one (8 ranks on 8 GPUs)",
		}},
		{"memory", func(r []map[string]any) { r[5]["mem_nodes"] = []int{0} }, nil, []string{"rank 5: memory bind [0], GPU 5's NUMA Affinity 1"}},
		{"no memory policy", func(r []map[string]any) { r[0]["mem_policy"], r[0]["mem_nodes"] = "off", nil }, nil, []string{
			`rank 0: no memory policy ("off" []), GPU 0's NUMA Affinity 0 on a node of several NUMA nodes`,
		}},
		{"far hca", func(r []map[string]any) { r[0]["hcas"] = []string{"mlx5_1:1"} }, nil, []string{
			"rank 0: HCA mlx5_1:1 is NODE from GPU 0, topo -m's nearest (PIX): mlx5_0",
		}},
		{"no hca", func(r []map[string]any) { r[4]["hcas"] = nil }, nil, []string{"rank 4: no HCA, topo -m puts mlx5_4 at PIX from GPU 4"}},
		{"unknown hca", func(r []map[string]any) { r[3]["hcas"] = []string{"mlx5_99"} }, nil, []string{
			"rank 3: HCA mlx5_99 is not a NIC of topo -m (mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8)",
		}},
		{"split core", func(r []map[string]any) { r[0]["cpus"] = "0-13,112-124" }, []string{"--gres", gres}, []string{
			"rank 0: CPUs 0-13,112-124 split cores: core 13 (CPUs 13,125, rank has 13)",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"ranks", "--topo", topo, "--explain", mutate(t, x, c.f)}, c.args...)
			code, out, _ := topocheck(args...)
			want := strings.Join(c.lines, "\n") + "\ntopocheck ranks: 8 ranks on 8 GPUs, " + plural(len(c.lines), "mismatch", "mismatches") + "\n"
			if code != 1 || out != want {
				t.Errorf("exit %d, output\n%swant\n%s", code, out, want)
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	topo := topoFile(t, "dgxh100")
	garbage := write(t, "garbage", "not a topology\n")
	badJSON := write(t, "bad.json", "{")
	cases := []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "usage: topocheck"},
		{[]string{"-h"}, 0, ""},
		{[]string{"nope"}, 2, `unknown mode "nope"`},
		{[]string{"gres", "--topo", topo}, 2, "--gres is required"},
		{[]string{"ranks", "--topo", topo}, 2, "--explain is required"},
		{[]string{"gres", "--topo", garbage, "--gres", badJSON}, 2, "garbage: line 2: no header"},
		{[]string{"gres", "--topo", topo, "--gres", badJSON}, 2, "bad.json: unexpected EOF"},
		{[]string{"gres", "--topo", topo, "--gres", filepath.Join(t.TempDir(), "absent.json")}, 2, "absent.json"},
		{[]string{"ranks", "--topo", topo, "--explain", badJSON}, 2, "bad.json"},
		{[]string{"gres", "--topo", topo, "--bogus"}, 2, "unknown flag"},
	}
	for _, c := range cases {
		code, _, errs := topocheck(c.args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errs, c.code, c.want)
		}
	}
}
