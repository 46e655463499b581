package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gpuprep/internal/nodeshape"
	"gpuprep/lib/cpuset"
	"gpuprep/test/slurmharness"
)

// eightGPUs is a DGX-like node's GPUs and HCAs: eight GPUs, each behind its
// own PCIe switch with its own InfiniBand HCA (mlx5_0..mlx5_7), in
// increasing bus order, with device minors out of bus order as on real
// DGX H100 nodes (2,3,0,1,6,7,4,5): /dev/nvidia<minor> is not the index.
func eightGPUs() ([]nodeshape.GPU, []nodeshape.NIC) {
	port := []nodeshape.IBPort{{State: "4: ACTIVE", Rate: "400 Gb/sec (4X NDR)", LinkLayer: "InfiniBand"}}
	gpuBus := []string{"18", "2a", "3a", "5d", "9a", "ab", "ba", "db"}
	hcaBus := []string{"19", "2b", "3b", "5e", "9b", "ac", "bb", "dc"}
	minors := []int{2, 3, 0, 1, 6, 7, 4, 5}
	var gpus []nodeshape.GPU
	var nics []nodeshape.NIC
	for i := range gpuBus {
		gpus = append(gpus, nodeshape.GPU{
			BusID: "0000:" + gpuBus[i] + ":00.0", Minor: minors[i],
			UUID: fmt.Sprintf("GPU-00000000-0000-0000-0000-0000000008%02d", i),
			Name: "NVIDIA H200", DeviceID: 0x2335, NUMANode: 0, PCISwitch: i + 1,
		})
		b, _ := strconv.ParseUint(hcaBus[i], 16, 8)
		nics = append(nics, nodeshape.NIC{
			BusID: "0000:" + hcaBus[i] + ":00.0", NUMANode: 0, IBName: fmt.Sprintf("mlx5_%d", i),
			NetName: fmt.Sprintf("ibp%ds0", b), Ports: port, PCISwitch: i + 1,
		})
	}
	return gpus, nics
}

// physGPU is one GPU of the test's shape as a user would name it.
type physGPU struct {
	BusID, UUID, HCA string // HCA: the one behind the GPU's switch
	Minor            int
}

func (g physGPU) String() string {
	return fmt.Sprintf("%s (/dev/nvidia%d, %s)", g.BusID, g.Minor, g.HCA)
}

// slurmEnv is what Slurm itself set in a task, printed before srunwrap.
type slurmEnv struct{ Visible, StepGPUs string }

// TestSrunwrapEightGPUs runs srunwrap in a real Slurm on an 8-GPU node with
// 8 (and 16) ranks, as most GPU clusters run, with gres.conf written in
// descending minor order, neither bus nor minor order, so that Slurm's GPU
// index i (the i-th File= line) is a different GPU than the i-th in bus
// order or /dev/nvidia<i>. The expected GPU of each rank is worked out from
// this test's own shape and gres.conf: Slurm's index -> gres.conf line ->
// minor -> bus id. The GPU a rank really gets is the one CUDA opens from
// the CUDA_VISIBLE_DEVICES the command sees: a UUID names itself; an index
// k, with no device cgroup confining the task (as here), is the k-th of
// all the node's GPUs in PCI bus order (CUDA_DEVICE_ORDER=PCI_BUS_ID, the
// order nvidia-smi and NCCL's topology use; Slurm 22.05's gres.conf(5),
// Links: "The device number is created by sorting the GPUs by PCI bus ID").
// Each rank's NCCL_IB_HCA must be the HCA behind the switch of that GPU.
func TestSrunwrapEightGPUs(t *testing.T) {
	gpus, nics := eightGPUs()
	root, online := thisMachineRootWith(t, gpus, nics)

	// The physical GPUs in bus order (CUDA's index order) and by minor.
	var byBus []physGPU
	byMinor := map[int]physGPU{}
	for _, g := range gpus {
		k := slices.IndexFunc(nics, func(n nodeshape.NIC) bool { return n.PCISwitch == g.PCISwitch })
		p := physGPU{BusID: g.BusID, UUID: g.UUID, Minor: g.Minor, HCA: nics[k].IBName}
		byBus = append(byBus, p)
		byMinor[g.Minor] = p
	}
	slices.SortFunc(byBus, func(a, b physGPU) int { return strings.Compare(a.BusID, b.BusID) })

	// gres.conf by descending minor: Slurm's GPU i is /dev/nvidia<7-i>.
	var gresMinors []int
	for m := len(gpus) - 1; m >= 0; m-- {
		gresMinors = append(gresMinors, m)
	}
	devDir := t.TempDir()
	devs := slurmharness.MakeDevices(t, devDir, gresMinors)
	gres := "AutoDetect=off\n"
	for _, d := range devs {
		gres += "Name=gpu File=" + d + "\n"
	}
	for i, m := range gresMinors {
		if byBus[i].Minor == m {
			t.Fatalf("gres.conf line %d is /dev/nvidia%d, also GPU %d in bus order: the test could not tell the orders apart", i, m, i)
		}
	}
	// slurmIndex is the GPU Slurm's index i denotes.
	slurmIndex := func(i int) (physGPU, bool) {
		if i < 0 || i >= len(gresMinors) {
			return physGPU{}, false
		}
		return byMinor[gresMinors[i]], true
	}
	// opened is the GPU CUDA opens for a one-entry CUDA_VISIBLE_DEVICES.
	opened := func(cvd string) (physGPU, bool) {
		if k, err := strconv.Atoi(cvd); err == nil {
			if k < 0 || k >= len(byBus) {
				return physGPU{}, false
			}
			return byBus[k], true
		}
		i := slices.IndexFunc(byBus, func(g physGPU) bool { return strings.EqualFold(g.UUID, cvd) })
		if i < 0 {
			return physGPU{}, false
		}
		return byBus[i], true
	}

	// The prolog reads gres.conf under its root ([gres] conf) to record
	// Slurm's order (slurm_gpu lines) in the node description.
	if err := os.MkdirAll(filepath.Join(root, "etc/slurm"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/slurm/gres.conf"), []byte(gres), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "gpuprep.toml")
	spool := filepath.Join(t.TempDir(), "spool")
	conf := `[general]
log_file = ""
metrics_dir = ""
[health]
prolog = false
epilog = false
[gres]
conf = "/etc/slurm/gres.conf" # in the fixture root (SLURM_CONF's folder is the harness's)
[profiles.default]
kernel_numa_balancing = 0
`
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	args := " --root " + root + " --gpu-backend procfs --config " + cfg + " --state-dir " + spool + ` "$@"`
	c := slurmharness.Start(t, slurmharness.Options{
		Gres:     "gpu:8",
		GresConf: gres,
		Files: map[string]string{
			"prolog.sh": "#!/bin/sh\nexec " + bin(t, "gpuprep-prolog") + args + "\n",
			"epilog.sh": "#!/bin/sh\nexec " + bin(t, "gpuprep-epilog") + args + "\n",
		},
		Prolog: "prolog.sh",
		Epilog: "epilog.sh",
	})
	start := time.Now()
	t.Cleanup(func() {
		t.Logf("Slurm started in %v; the subtests took %v", c.StartTime.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	})

	// Each task prints what Slurm set, then execs srunwrap, which execs the
	// probe: slurmstepd stays the probe's parent.
	slurmLine := `echo "slurm $SLURM_PROCID|$CUDA_VISIBLE_DEVICES|$SLURM_STEP_GPUS"; exec "$@"`
	run := func(t *testing.T, srunArgs ...string) ([]probeOut, map[string]slurmEnv) {
		t.Helper()
		a := append(slices.Clone(srunArgs), "--cpu-bind=none", "/bin/sh", "-c", slurmLine, "sh",
			bin(t, "srunwrap"), "--root", root, "-v", "--", bin(t, "rankprobe"))
		out, stderr, err := c.Srun(a...)
		if err != nil {
			t.Fatalf("srun %s: %v\n%s\n%s", strings.Join(srunArgs, " "), err, stderr, c.LogTails(20))
		}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("srun %s: srunwrap -v said:\n%s", strings.Join(srunArgs, " "), stderr)
			}
		})
		env := map[string]slurmEnv{}
		for _, l := range strings.Split(out, "\n") {
			if rest, ok := strings.CutPrefix(l, "slurm "); ok {
				f := strings.Split(rest, "|")
				if len(f) == 3 {
					env[f[0]] = slurmEnv{f[1], f[2]}
				}
			}
		}
		return parseProbes(t, out), env
	}
	// checkRank checks what every rank relies on and returns its GPU, the
	// one CUDA opens from its CUDA_VISIBLE_DEVICES.
	checkRank := func(t *testing.T, i int, p probeOut, s slurmEnv, want physGPU) physGPU {
		t.Helper()
		got, ok := opened(p.Visible)
		switch {
		case !ok:
			t.Errorf("rank %d: CUDA_VISIBLE_DEVICES=%q (Slurm set %q, SLURM_STEP_GPUS=%s): want one GPU of this node", i, p.Visible, s.Visible, s.StepGPUs)
		case got != want:
			t.Errorf("rank %d: CUDA_VISIBLE_DEVICES=%q opens GPU %s; Slurm set CUDA_VISIBLE_DEVICES=%s (SLURM_STEP_GPUS=%s), its GPU for this rank is %s (gres.conf order)",
				i, p.Visible, got, s.Visible, s.StepGPUs, want)
		}
		if ok {
			if w := "=" + got.HCA + ":1"; p.NCCL["NCCL_IB_HCA"] != w {
				t.Errorf("rank %d: NCCL_IB_HCA=%q, want %q, the HCA behind the switch of the GPU it opens (%s)", i, p.NCCL["NCCL_IB_HCA"], w, got)
			}
		}
		if cpus, err := cpuset.Parse(p.CPUs); err != nil || cpus.IsEmpty() || !cpus.Intersection(online).Equal(cpus) {
			t.Errorf("rank %d: CPUs %q (%v), want some of the online CPUs %s", i, p.CPUs, err, online)
		}
		if p.ParentComm != "slurmstepd" {
			t.Errorf("rank %d: the command's parent is %q, want slurmstepd (srunwrap must exec)", i, p.ParentComm)
		}
		return got
	}
	// slurmGPU is the GPU Slurm's CUDA_VISIBLE_DEVICES entry k (in the
	// task as Slurm started it) denotes.
	slurmGPU := func(t *testing.T, i int, s slurmEnv, k int) physGPU {
		t.Helper()
		entries := strings.Split(s.Visible, ",")
		if k >= len(entries) {
			t.Fatalf("rank %d: Slurm set CUDA_VISIBLE_DEVICES=%q, no entry %d", i, s.Visible, k)
		}
		idx, err := strconv.Atoi(entries[k])
		g, ok := slurmIndex(idx)
		if err != nil || !ok {
			t.Fatalf("rank %d: Slurm set CUDA_VISIBLE_DEVICES=%q: entry %d is not one of Slurm's GPU indexes", i, s.Visible, k)
		}
		return g
	}

	t.Run("8 ranks share --gres=gpu:8", func(t *testing.T) {
		// Slurm gives every task all 8 GPUs; srunwrap gives local rank i
		// the i-th of them (i mod 8).
		ps, env := run(t, "-n8", "-O", "--gres=gpu:8")
		if len(ps) != 8 {
			t.Fatalf("want 8 ranks, got %d: %+v", len(ps), ps)
		}
		used := map[string]int{}
		for i, p := range ps {
			s := env[p.ProcID]
			if len(strings.Split(s.Visible, ",")) != 8 {
				t.Errorf("rank %d: Slurm set CUDA_VISIBLE_DEVICES=%q, want all 8 GPUs", i, s.Visible)
				continue
			}
			g := checkRank(t, i, p, s, slurmGPU(t, i, s, i))
			used[g.BusID]++
		}
		for _, g := range byBus {
			if used[g.BusID] != 1 {
				t.Errorf("GPU %s is used by %d ranks, want exactly 1 (ranks' GPUs: %v)", g, used[g.BusID], used)
			}
		}
		b, err := os.ReadFile(filepath.Join(root, "run/gpuprep/node-description"))
		if err != nil {
			t.Fatalf("the prolog wrote no node description: %v", err)
		}
		var recorded []int
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "slurm_gpu "); ok {
				m, _ := strconv.Atoi(v)
				recorded = append(recorded, m)
			}
		}
		if !slices.Equal(recorded, gresMinors) {
			t.Errorf("node description slurm_gpu minors %v, want gres.conf's %v", recorded, gresMinors)
		}
	})

	t.Run("--gpus-per-task=1", func(t *testing.T) {
		// Slurm gives each task one GPU itself; srunwrap keeps it.
		ps, env := run(t, "-n8", "-O", "--gpus-per-task=1")
		if len(ps) != 8 {
			t.Fatalf("want 8 ranks, got %d: %+v", len(ps), ps)
		}
		used := map[string]int{}
		for i, p := range ps {
			s := env[p.ProcID]
			if strings.Contains(s.Visible, ",") || s.Visible == "" {
				t.Errorf("rank %d: Slurm set CUDA_VISIBLE_DEVICES=%q, want one GPU per task", i, s.Visible)
				continue
			}
			g := checkRank(t, i, p, s, slurmGPU(t, i, s, 0))
			used[g.BusID]++
		}
		for _, g := range byBus {
			if used[g.BusID] != 1 {
				t.Errorf("GPU %s is used by %d ranks, want exactly 1", g, used[g.BusID])
			}
		}
	})

	t.Run("16 ranks on 8 GPUs", func(t *testing.T) {
		// Two ranks per GPU: local rank i gets the (i mod 8)-th GPU, and
		// both ranks of a GPU its HCA.
		ps, env := run(t, "-n16", "-O", "--gres=gpu:8")
		if len(ps) != 16 {
			t.Fatalf("want 16 ranks, got %d: %+v", len(ps), ps)
		}
		used := map[string][]int{}
		for i, p := range ps {
			s := env[p.ProcID]
			if len(strings.Split(s.Visible, ",")) != 8 {
				t.Errorf("rank %d: Slurm set CUDA_VISIBLE_DEVICES=%q, want all 8 GPUs", i, s.Visible)
				continue
			}
			g := checkRank(t, i, p, s, slurmGPU(t, i, s, i%8))
			used[g.BusID] = append(used[g.BusID], i)
		}
		for _, g := range byBus {
			if len(used[g.BusID]) != 2 {
				t.Errorf("GPU %s is used by ranks %v, want exactly 2", g, used[g.BusID])
			}
		}
	})
}
