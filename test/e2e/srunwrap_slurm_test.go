package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"gpuprep/internal/fixturegen"
	"gpuprep/internal/nodeshape"
	"gpuprep/lib/cpuset"
	"gpuprep/test/slurmharness"
)

// probeOut is what test/rankprobe prints: the task as the kernel and its
// environment see it.
type probeOut struct {
	CPUs       string            `json:"cpus_allowed_list"`
	Mems       string            `json:"mems_allowed_list"`
	Policy     string            `json:"mem_policy"`
	PolicyMask []int             `json:"mem_nodes"`
	Visible    string            `json:"cuda_visible_devices"`
	NCCL       map[string]string `json:"nccl"`
	ParentComm string            `json:"parent_comm"`
	ProcID     string            `json:"slurm_procid"`
}

// thisMachineRoot writes a fixture root with this machine's CPUs (one
// socket, one NUMA node, one thread per core: the real kernel then accepts
// the CPUs srunwrap plans from it) and two GPUs, each behind its own PCIe
// switch with an InfiniBand HCA, as on a 2-GPU node.
func thisMachineRoot(t *testing.T) (string, cpuset.Set) {
	t.Helper()
	port := []nodeshape.IBPort{{State: "4: ACTIVE", Rate: "400 Gb/sec (4X NDR)", LinkLayer: "InfiniBand"}}
	return thisMachineRootWith(t,
		[]nodeshape.GPU{
			{BusID: "0000:18:00.0", Minor: 0, UUID: "GPU-00000000-0000-0000-0000-00000000aaaa", Name: "NVIDIA H200", DeviceID: 0x2335, NUMANode: 0, PCISwitch: 1},
			{BusID: "0000:2a:00.0", Minor: 1, UUID: "GPU-00000000-0000-0000-0000-00000000bbbb", Name: "NVIDIA H200", DeviceID: 0x2335, NUMANode: 0, PCISwitch: 2},
		},
		[]nodeshape.NIC{
			{BusID: "0000:19:00.0", NUMANode: 0, IBName: "mlx5_0", NetName: "ibp25s0", Ports: port, PCISwitch: 1},
			{BusID: "0000:2b:00.0", NUMANode: 0, IBName: "mlx5_1", NetName: "ibp43s0", Ports: port, PCISwitch: 2},
		})
}

// thisMachineRootWith writes a fixture root with this machine's CPUs (as
// thisMachineRoot) and the given GPUs and NICs, all on NUMA node 0, and
// this boot's id (the prolog tags the node description with it). It
// returns the root and the online CPUs.
func thisMachineRootWith(t *testing.T, gpus []nodeshape.GPU, nics []nodeshape.NIC) (string, cpuset.Set) {
	t.Helper()
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		t.Fatal(err)
	}
	online, err := cpuset.Parse(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if online.Min() != 0 || online.Max() != online.Size()-1 || online.Size() < 2 {
		t.Skipf("needs CPUs 0..n-1 online (n >= 2), have %s", online)
	}
	s := nodeshape.Shape{
		Name: "thismachine", Hostname: "thismachine",
		CPUVendor: "GenuineIntel", CPUModel: "Intel(R) Xeon(R) CPU",
		Sockets: 1, CoresPerSocket: online.Size(), ThreadsPerCore: 1, NUMAPerSocket: 1,
		MemoryMiBPerNode: 8192, NoCPUFreq: true, NoCPUIdle: true,
		GPUs: gpus, NICs: nics,
	}
	dir := filepath.Join(t.TempDir(), "root")
	if err := fixturegen.Write(s, dir); err != nil {
		t.Fatal(err)
	}
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "proc/sys/kernel/random"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "proc/sys/kernel/random/boot_id"), boot, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, online
}

// parseProbes reads one JSON object per line, sorted by SLURM_PROCID (as
// a number: rank 10 after rank 9).
func parseProbes(t *testing.T, out string) []probeOut {
	t.Helper()
	var ps []probeOut
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var p probeOut
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			t.Fatalf("probe output %q: %v", line, err)
		}
		ps = append(ps, p)
	}
	sort.SliceStable(ps, func(i, j int) bool {
		a, errA := strconv.Atoi(ps[i].ProcID)
		b, errB := strconv.Atoi(ps[j].ProcID)
		if errA != nil || errB != nil {
			return ps[i].ProcID < ps[j].ProcID
		}
		return a < b
	})
	return ps
}

// TestSrunwrapInSlurm runs srunwrap as users do, in a real Slurm with two
// GPUs: each rank gets one GPU, disjoint whole cores of the GPUs' NUMA
// node (applied by the real kernel), memory bound there, and the HCA
// behind its GPU's switch; srunwrap leaves no process of its own between
// slurmstepd and the command; --srun launches the same; the command's exit
// code and a scancel reach the command.
func TestSrunwrapInSlurm(t *testing.T) {
	root, online := thisMachineRoot(t)
	devDir := t.TempDir()
	slurmharness.MakeDevices(t, devDir, []int{0, 1})
	cfg := filepath.Join(t.TempDir(), "gpuprep.toml")
	spool := filepath.Join(t.TempDir(), "spool")
	// The prolog copies [srunwrap] and [nccl] into the node description;
	// its profile sets nothing this simulated node lacks.
	conf := `[general]
log_file = ""
metrics_dir = ""
[health]
prolog = false
epilog = false
[profiles.default]
kernel_numa_balancing = 0
[[nccl.fabric]]
name = "test"
env = { NCCL_IB_QPS_PER_CONNECTION = "4" }
`
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	args := " --root " + root + " --gpu-backend procfs --config " + cfg + " --state-dir " + spool + ` "$@"`
	c := slurmharness.Start(t, slurmharness.Options{
		Gres:     "gpu:2",
		GresConf: fmt.Sprintf("AutoDetect=off\nName=gpu File=%s/nvidia0\nName=gpu File=%s/nvidia1\n", devDir, devDir),
		Files: map[string]string{
			"prolog.sh": "#!/bin/sh\nexec " + bin(t, "gpuprep-prolog") + args + "\n",
			"epilog.sh": "#!/bin/sh\nexec " + bin(t, "gpuprep-epilog") + args + "\n",
		},
		Prolog: "prolog.sh",
		Epilog: "epilog.sh",
	})
	sw := bin(t, "srunwrap")
	probe := bin(t, "rankprobe")
	wrap := []string{sw, "--root", root}

	check := func(t *testing.T, ps []probeOut, bound bool) {
		t.Helper()
		if len(ps) != 2 {
			t.Fatalf("want 2 ranks, got %d: %+v", len(ps), ps)
		}
		seen := cpuset.New()
		for i, p := range ps {
			if p.Visible != fmt.Sprint(i) {
				t.Errorf("rank %d: CUDA_VISIBLE_DEVICES=%q, want %d", i, p.Visible, i)
			}
			if want := fmt.Sprintf("=mlx5_%d:1", i); p.NCCL["NCCL_IB_HCA"] != want {
				t.Errorf("rank %d: NCCL_IB_HCA=%q, want %q (the HCA behind its GPU's switch)", i, p.NCCL["NCCL_IB_HCA"], want)
			}
			if p.NCCL["NCCL_IB_QPS_PER_CONNECTION"] != "4" {
				t.Errorf("rank %d: the fabric's NCCL_IB_QPS_PER_CONNECTION is %q", i, p.NCCL["NCCL_IB_QPS_PER_CONNECTION"])
			}
			if p.ParentComm != "slurmstepd" {
				t.Errorf("rank %d: the command's parent is %q, want slurmstepd (srunwrap must exec)", i, p.ParentComm)
			}
			cpus, err := cpuset.Parse(p.CPUs)
			if err != nil {
				t.Fatalf("rank %d: Cpus_allowed_list %q: %v", i, p.CPUs, err)
			}
			if !bound {
				continue
			}
			if cpus.IsEmpty() || cpus.Equal(online) || !cpus.Intersection(seen).IsEmpty() {
				t.Errorf("rank %d: CPUs %s: want a part of %s disjoint from the other rank's %s", i, cpus, online, seen)
			}
			seen = seen.Union(cpus)
			// One NUMA node: binding memory to it would change nothing, so
			// srunwrap leaves the policy alone (lib/bind's tests bind for real).
			if p.Policy != "default" {
				t.Errorf("rank %d: memory policy %q nodes %v, want default on a one-node machine", i, p.Policy, p.PolicyMask)
			}
		}
	}

	t.Run("srun", func(t *testing.T) {
		args := append([]string{"-n2", "--gres=gpu:2", "--cpu-bind=none"}, wrap...)
		out := c.MustSrun(append(args, "--", probe)...)
		check(t, parseProbes(t, out), true)
		if _, err := os.Stat(filepath.Join(root, "run/gpuprep/node-description")); err != nil {
			t.Errorf("the prolog wrote no node description: %v", err)
		}
	})

	t.Run("srun --srun", func(t *testing.T) {
		args := []string{"--root", root, "--srun", "-n2", "--gres=gpu:2", "--cpu-bind=none", "--", probe}
		out, stderr, err := c.Run(context.Background(), sw, args...)
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		check(t, parseProbes(t, out), true)
	})

	t.Run("Slurm's binding kept", func(t *testing.T) {
		// task/affinity binds each task to a core unless --cpu-bind=none;
		// with cpu_binding = "keep" srunwrap leaves that as it is.
		args := append([]string{"-n2", "--gres=gpu:2", "--cpu-bind=cores"}, wrap...)
		out := c.MustSrun(append(args, "--", probe)...)
		ps := parseProbes(t, out)
		check(t, ps, false)
		for i, p := range ps {
			if cpus, _ := cpuset.Parse(p.CPUs); cpus.Size() != 1 {
				t.Errorf("rank %d: CPUs %s, want Slurm's one core kept", i, p.CPUs)
			}
		}
	})

	t.Run("exit code", func(t *testing.T) {
		args := append([]string{"-n1", "--gres=gpu:1"}, wrap...)
		_, _, err := c.Srun(append(args, "--", "/bin/sh", "-c", "exit 7")...)
		if err == nil || !strings.Contains(err.Error(), "exit status 7") {
			t.Errorf("srun exit: %v, want exit status 7", err)
		}
	})

	t.Run("scancel reaches the command", func(t *testing.T) {
		mark := filepath.Join(t.TempDir(), "got-term")
		script := fmt.Sprintf("#!/bin/sh\nsrun %s -- /bin/sh -c 'trap \"echo TERM > %s; exit 0\" TERM; echo started; while :; do sleep 0.1; done'\n",
			strings.Join(append(wrap, "-q"), " "), mark)
		id := c.Sbatch(script, "-n1", "--gres=gpu:1")
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(c.JobOutput(id), "started") {
			if time.Now().After(deadline) {
				t.Fatalf("job %d did not start: %s", id, c.JobOutput(id))
			}
			time.Sleep(100 * time.Millisecond)
		}
		if _, stderr, err := c.Run(context.Background(), "scancel", fmt.Sprint(id)); err != nil {
			t.Fatalf("scancel: %v %s", err, stderr)
		}
		c.WaitJob(id, 30*time.Second)
		for time.Now().Before(deadline) {
			if _, err := os.Stat(mark); err == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("the command never got SIGTERM from scancel; job output:\n%s", c.JobOutput(id))
	})

	t.Run("bad input runs the command unbound", func(t *testing.T) {
		// Slurm sets CUDA_VISIBLE_DEVICES itself: change it between
		// slurmstepd and srunwrap.
		args := append([]string{"-n1", "--gres=gpu:1", "/usr/bin/env", "CUDA_VISIBLE_DEVICES=GPU-not-on-this-node"}, wrap...)
		out, stderr, err := c.Srun(append(args, "--", probe)...)
		if err != nil {
			t.Fatalf("%v", err)
		}
		if ps := parseProbes(t, out); len(ps) != 1 || ps[0].Visible != "GPU-not-on-this-node" {
			t.Errorf("probe %+v: want the command run with CUDA_VISIBLE_DEVICES untouched", ps)
		}
		if !strings.Contains(stderr, "srunwrap: warning:") || !strings.Contains(stderr, "GPU-not-on-this-node") {
			t.Errorf("stderr %q: want a warning naming the unknown GPU", stderr)
		}
	})
}
