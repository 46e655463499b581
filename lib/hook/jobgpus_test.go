package hook

import (
	"fmt"
	"gpuprep/lib/plan"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gpuprep/internal/testroot"
	"gpuprep/lib/gresconf"
)

// writeGresConf writes root/etc/slurm/gres.conf: text, or when "" one
// File= line per GPU in PCI bus order (as gpuprep-gres writes it), so that
// SLURM_JOB_GPUS index i is the i-th GPU in bus order.
func writeGresConf(t *testing.T, root, text string) {
	t.Helper()
	if text == "" {
		var b strings.Builder
		for _, d := range testroot.GPUs(t, root) {
			fmt.Fprintf(&b, "Name=gpu File=/dev/nvidia%d\n", d.Minor)
		}
		text = b.String()
	}
	p := filepath.Join(root, "etc/slurm/gres.conf")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestGresConfPath(t *testing.T) {
	for _, c := range []struct{ conf, slurmConf, want string }{
		{"auto", "/etc/slurm-llnl/slurm.conf", "/etc/slurm-llnl/gres.conf"},
		{"", "", "/etc/slurm/gres.conf"},
		{"auto", "", "/etc/slurm/gres.conf"},
		{"/opt/gres.conf", "/etc/slurm/slurm.conf", "/opt/gres.conf"},
	} {
		if got := gresConfPath(c.conf, c.slurmConf); got != c.want {
			t.Errorf("gresConfPath(%q, %q) = %q, want %q", c.conf, c.slurmConf, got, c.want)
		}
	}
}

// TestGresMinors: the minor of each SLURM_JOB_GPUS index is the gres.conf
// File= list in written order (what Slurm 22.05 does, see
// test/e2e TestSlurmJobGPUsAreGresOrder).
func TestGresMinors(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       []int
		err        string
	}{
		{"PCI order (gpuprep-gres)", "Name=gpu File=/dev/nvidia2\nName=gpu File=/dev/nvidia3\nName=gpu File=/dev/nvidia0\n", []int{2, 3, 0}, ""},
		{"range", "AutoDetect=off\nName=gpu Type=h100 File=/dev/nvidia[0-7]\n", []int{0, 1, 2, 3, 4, 5, 6, 7}, ""},
		{"reversed", "Name=gpu File=/dev/nvidia5\nName=gpu File=/dev/nvidia4\n", []int{5, 4}, ""},
		{"other nodes and names", "NodeName=other Name=gpu File=/dev/nvidia9\nName=mps Count=100 File=/dev/nvidia0\nNodeName=n[1-2] Name=gpu File=/dev/nvidia1\n", []int{1}, ""},
		{"global lines first", "NodeName=n1 Name=gpu File=/dev/nvidia1\nName=gpu File=/dev/nvidia0\n", []int{0, 1}, ""},
		{"Links do not reorder", "Name=gpu File=/dev/nvidia0 Links=0,-1\nName=gpu File=/dev/nvidia1 Links=-1,0\n", []int{0, 1}, ""},
		{"AutoDetect", "AutoDetect=nvml\n", nil, "AutoDetect=nvml"},
		{"node AutoDetect", "NodeName=n1 AutoDetect=nvml\nName=gpu File=/dev/nvidia0\n", nil, "AutoDetect=nvml"},
		{"MIG devices count one each", "Name=gpu File=/dev/nvidia1\nName=gpu MultipleFiles=/dev/nvidia-caps/nvidia-cap21,/dev/nvidia0,/dev/nvidia-caps/nvidia-cap22\nName=gpu MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap30\nName=gpu File=/dev/nvidia[2-3]\n",
			[]int{1, 0, 0, 2, 3}, ""},
		{"MIG without its GPU", "Name=gpu MultipleFiles=/dev/nvidia-caps/nvidia-cap21,/dev/nvidia-caps/nvidia-cap22\n", nil, "line 1: MultipleFiles= names no /dev/nvidia<N>"},
		{"no file", "Name=gpu Count=8\n", nil, "line 1: Name=gpu with no File="},
		{"odd file", "Name=gpu File=/dev/dri/card0\n", nil, "line 1: File=/dev/dri/card0 is not /dev/nvidia<N>"},
	} {
		g, err := gresconf.Parse("/etc/slurm/gres.conf", []byte(c.text))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		devs, err := gresMinors(g, "n1", "gpu")
		var got []int
		for _, d := range devs {
			got = append(got, d.Minor)
			if d.MIG != (strings.Contains(c.name, "MIG") && d.Minor == 0) {
				t.Errorf("%s: device %+v: MIG flag wrong", c.name, d)
			}
		}
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.HasPrefix(err.Error(), "/etc/slurm/gres.conf") {
				t.Errorf("%s: err %v, want one naming gres.conf and %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, %v; want %v", c.name, got, err, c.want)
		}
	}
}

// TestMapJobGPUs on the dgxh100 fixture, whose minors differ from PCI
// order (the GPU at the lowest bus id is /dev/nvidia2).
func TestMapJobGPUs(t *testing.T) {
	e := newEnv(t, "dgxh100", "procfs")
	all := testroot.GPUs(t, e.root)
	if all[0].Minor == 0 {
		t.Fatal("fixture: the first GPU in bus order is /dev/nvidia0; the test needs minors out of PCI order")
	}
	byMinor := func(m int) string {
		for _, d := range all {
			if d.Minor == m {
				return d.BusID
			}
		}
		return "none"
	}
	plain := func(minors ...int) []gresDevice {
		var out []gresDevice
		for _, m := range minors {
			out = append(out, gresDevice{Minor: m})
		}
		return out
	}
	got, mig, err := mapJobGPUs(all, []int{0, 3}, plain(0, 1, 2, 3, 4, 5, 6, 7), "gres.conf")
	if err != nil || mig || len(got) != 2 || got[0].BusID != byMinor(0) || got[1].BusID != byMinor(3) {
		t.Errorf("range gres.conf, GPUs 0,3: %+v, %v; want the GPUs of /dev/nvidia0 and /dev/nvidia3", got, err)
	}
	if got[0].BusID == all[0].BusID {
		t.Error("GPU 0 mapped to the first GPU in bus order")
	}
	if _, _, err := mapJobGPUs(all, []int{8}, plain(0, 1, 2, 3, 4, 5, 6, 7), "gres.conf"); err == nil || !strings.Contains(err.Error(), "names GPU 8, but gres.conf lists 8 GPUs") {
		t.Errorf("index 8: %v", err)
	}
	if _, _, err := mapJobGPUs(all, []int{0}, plain(12), "gres.conf"); err == nil || !strings.Contains(err.Error(), "/dev/nvidia12") {
		t.Errorf("minor 12: %v", err)
	}
	// Two MIG devices of /dev/nvidia0 and the whole /dev/nvidia1: two GPUs.
	devs := []gresDevice{{Minor: 1}, {Minor: 0, MIG: true}, {Minor: 0, MIG: true}}
	got, mig, err = mapJobGPUs(all, []int{2, 1, 0}, devs, "gres.conf")
	if err != nil || !mig || len(got) != 2 || got[0].BusID != byMinor(0) || got[1].BusID != byMinor(1) {
		t.Errorf("MIG devices: %+v mig=%v %v; want the GPUs of /dev/nvidia0 and /dev/nvidia1, mig", got, mig, err)
	}
}

// TestPrologTunesTheJobsGPUs: with a hand-written File=/dev/nvidia[0-7]
// the prolog tunes the GPU of /dev/nvidiaN for SLURM_JOB_GPUS=N, not the
// N-th in bus order; without a usable gres.conf it tunes no GPU and warns.
func TestPrologTunesTheJobsGPUs(t *testing.T) {
	e := newEnv(t, "dgxh100", "mock:dgxh100")
	all := testroot.GPUs(t, e.root)
	uuidOf := map[int]string{}
	for _, d := range all {
		uuidOf[d.Minor] = d.UUID
	}
	gpuScopes := func(out *Outcome) []string {
		var s []string
		for _, h := range out.Holds {
			if sc, ok := strings.CutPrefix(h.ID.Scope, "gpu:"); ok && !slices.Contains(s, sc) {
				s = append(s, sc)
			}
		}
		slices.Sort(s)
		return s
	}
	writeGresConf(t, e.root, "Name=gpu File=/dev/nvidia[0-7]\n")
	out := e.prolog(1, []int{0, 5}, "")
	want := []string{uuidOf[0], uuidOf[5]}
	slices.Sort(want)
	if got := gpuScopes(out); !slices.Equal(got, want) {
		t.Errorf("range gres.conf, SLURM_JOB_GPUS=0,5: GPUs held %v, want /dev/nvidia0 and 5: %v", got, want)
	}
	e.epilog(1)

	writeGresConf(t, e.root, "AutoDetect=nvml\n")
	out = e.prolog(2, []int{0}, "")
	if got := gpuScopes(out); len(got) != 0 {
		t.Errorf("AutoDetect: GPUs held %v, want none", got)
	}
	if w := strings.Join(plan.Texts(out.Warnings), "\n"); !strings.Contains(w, "GPU knobs skipped: cannot tell which GPUs SLURM_JOB_GPUS=0 are: /etc/slurm/gres.conf: AutoDetect=nvml") {
		t.Errorf("warnings %q", w)
	}
	e.epilog(2)

	if err := os.Remove(filepath.Join(e.root, "etc/slurm/gres.conf")); err != nil {
		t.Fatal(err)
	}
	out = e.prolog(3, []int{0}, "")
	if got := gpuScopes(out); len(got) != 0 {
		t.Errorf("no gres.conf: GPUs held %v, want none", got)
	}
	if w := strings.Join(plan.Texts(out.Warnings), "\n"); !strings.Contains(w, "/etc/slurm/gres.conf: no such file") {
		t.Errorf("warnings %q", w)
	}
}
