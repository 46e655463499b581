package health

import (
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"gpuprep/internal/gpumock"
	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
)

const gpu3 = "GPU 3 (0000:5d:00.0)"

func TestChecksMatchConfig(t *testing.T) {
	all := map[string]bool{}
	for _, c := range append(append([]string{}, PrologChecks...), EpilogChecks...) {
		all[c] = true
	}
	for _, c := range config.HealthChecks {
		if !all[c] {
			t.Errorf("config.HealthChecks names %s, which no run checks", c)
		}
		delete(all, c)
	}
	for c := range all {
		t.Errorf("check %s missing from config.HealthChecks", c)
	}
}

func TestHealthyDGXH100(t *testing.T) {
	n := newNode(t)
	n.cfg.NVLinks = -1
	n.cfg.DriverMin = "535.104"
	n.cfg.IBRateGbps = 400
	rep := n.run("prolog", false)
	if rep.GPUs != 8 || len(rep.Fatal()) > 0 || len(rep.Warnings()) > 0 {
		t.Fatalf("healthy node: %+v", rep.Results)
	}
	for _, want := range []struct{ check, scope, value string }{
		{"gpu_count", "node", "8 GPUs"},
		{"driver_version", "node", "550.54.15 >= 535.104"},
		{"nvlinks", gpu3, "18 active"},
		{"pcie_link", gpu3, "x16 32.0 GT/s PCIe (idle: speed not compared)"},
		{"ib_ports", "mlx5_0 port 1", "ACTIVE 400 Gb/sec (4X NDR)"},
		{"xid", "node", "no new XIDs"},
		{"ecc_volatile", gpu3, "0"},
	} {
		r := one(t, rep, want.check, want.scope)
		if r.Status != OK || r.Value != want.value {
			t.Errorf("%s %s: %+v, want ok %q", want.check, want.scope, r, want.value)
		}
	}
	// The Ethernet port of mlx5_8 is not an InfiniBand port.
	if rs := find(rep, "ib_ports", "mlx5_8 port 1"); len(rs) != 0 {
		t.Errorf("Ethernet port checked: %+v", rs)
	}
	for _, c := range []string{"cmdqv", "nccl_topo", "row_remap"} {
		if r := find(rep, c, ""); len(r) == 0 || r[0].Status == Fail {
			t.Errorf("%s: %+v", c, r)
		}
	}
}

func TestGPUFaults(t *testing.T) {
	for _, tc := range []struct {
		name   string
		inject func(n *node)
		check  string
		sev    string
		reason string
	}{
		{"ecc", func(n *node) { gpumock.SetFaults(n.dev(3), gpumock.Faults{ECCVolatileUncorrected: 2}) },
			"ecc_volatile", "fatal", gpu3 + ": 2 volatile uncorrectable ECC errors"},
		{"remap failed", func(n *node) { gpumock.SetFaults(n.dev(3), gpumock.Faults{RemappingFailed: true}) },
			"row_remap", "fatal", gpu3 + ": row remapping failed (replace the GPU)"},
		{"remap pending", func(n *node) { gpumock.SetFaults(n.dev(3), gpumock.Faults{RemappedRowsPending: true}) },
			"row_remap", "fatal", gpu3 + ": row remapping pending (reset the GPU)"},
		{"nvlinks down", func(n *node) { n.cfg.NVLinks = -1; gpumock.SetFaults(n.dev(3), gpumock.Faults{NVLinksDown: 2}) },
			"nvlinks", "fatal", gpu3 + ": 16 of 18 NVLinks active, want 18 (all the GPU has)"},
		{"nvlinks count", func(n *node) { n.cfg.NVLinks = 18; gpumock.SetFaults(n.dev(3), gpumock.Faults{NVLinksDown: 1}) },
			"nvlinks", "fatal", gpu3 + ": 17 of 18 NVLinks active, want 18 (health.nvlinks)"},
		{"thermal", func(n *node) {
			gpumock.SetFaults(n.dev(3), gpumock.Faults{ThrottleReasons: gpu.ThrottleHWThermal | gpu.ThrottleSWPowerCap})
		}, "throttle", "warn", gpu3 + ": clocks throttled: hw_thermal"},
		{"persistence", func(n *node) { must(t, n.b.SetPersistence(3, false)) },
			"persistence", "warn", gpu3 + ": persistence mode is off"},
		{"ecc off pending", func(n *node) {
			n.dev(3).GetEccModeFunc = func() (nvml.EnableState, nvml.EnableState, nvml.Return) {
				return nvml.FEATURE_ENABLED, nvml.FEATURE_DISABLED, nvml.SUCCESS
			}
		}, "ecc_mode", "fatal", gpu3 + ": ECC is to be disabled at the next GPU reset"},
		{"ecc off", func(n *node) {
			n.dev(3).GetEccModeFunc = func() (nvml.EnableState, nvml.EnableState, nvml.Return) {
				return nvml.FEATURE_DISABLED, nvml.FEATURE_DISABLED, nvml.SUCCESS
			}
		}, "ecc_mode", "fatal", gpu3 + ": ECC is disabled"},
		{"lost GPU", func(n *node) {
			n.dev(3).GetTotalEccErrorsFunc = func(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) {
				return 0, nvml.ERROR_GPU_IS_LOST
			}
		}, "ecc_volatile", "fatal", gpu3 + ": volatile uncorrected ECC errors: ERROR_GPU_IS_LOST"},
		{"gpu count", func(n *node) { n.cfg.GPUCount = 9 }, "gpu_count", "fatal",
			"the mock:dgxh100 backend lists 8 GPUs, want 9 (health.gpu_count)"},
		{"driver", func(n *node) { n.cfg.DriverMin = "560" }, "driver_version", "fatal",
			"NVIDIA driver 550.54.15 is older than 560 (health.driver_min)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(t)
			tc.inject(n)
			rep := n.run("prolog", false)
			var got []Result
			for _, r := range rep.Results {
				if r.Status == Fail && r.Check == tc.check {
					got = append(got, r)
				} else if r.Status == Fail && !strings.HasPrefix(r.Reason, gpu3) {
					t.Errorf("another failure: %+v", r)
				}
			}
			if len(got) != 1 || got[0].Check != tc.check || got[0].Severity != tc.sev || !strings.Contains(got[0].Reason, tc.reason) {
				t.Fatalf("failures %+v, want one %s (%s) %q", got, tc.check, tc.sev, tc.reason)
			}
			if tc.sev == "fatal" && !strings.HasPrefix(rep.Reason(), "health: ") {
				t.Errorf("reason %q", rep.Reason())
			}
		})
	}
}

// The prolog checks only the job's GPUs; --health every GPU.
func TestScopeJobGPUs(t *testing.T) {
	n := newNode(t)
	gpumock.SetFaults(n.dev(3), gpumock.Faults{ECCVolatileUncorrected: 1})
	devs, err := n.b.Devices()
	must(t, err)
	rep, err := Run(t.Context(), Options{Op: "prolog", Root: n.root, GPU: n.b, Health: n.cfg, GPUs: devs[:2], Spool: n.spool})
	must(t, err)
	if len(rep.Fatal()) != 0 || len(find(rep, "ecc_volatile", "")) != 2 {
		t.Errorf("job on GPUs 0,1: %+v", rep.Results)
	}
	if rep := n.run("health", true); len(rep.Fatal()) != 1 || rep.Fatal()[0].Reason != gpu3+": 1 volatile uncorrectable ECC error" {
		t.Errorf("--health: %+v", rep.Fatal())
	}
}

// With the procfs backend the checks that need NVML are skipped, saying so.
func TestProcfsSkipsNVML(t *testing.T) {
	n := newNode(t)
	b := gpu.OpenProcfs(n.root)
	rep, err := Run(t.Context(), Options{Op: "health", Root: n.root, GPU: b, Health: n.cfg, ReadOnly: true})
	must(t, err)
	if r := one(t, rep, "gpu_count", "node"); r.Status != OK || r.Value != "8 GPUs" {
		t.Errorf("gpu_count %+v", r)
	}
	if r := one(t, rep, "driver_version", "node"); r.Status != OK || !strings.HasPrefix(r.Value, "550.54.15") {
		t.Errorf("driver %+v", r)
	}
	r := one(t, rep, "ecc_volatile", gpu3)
	if r.Status != Skip || !strings.Contains(r.Reason, "the procfs GPU backend cannot read ECC counters (needs NVML)") {
		t.Errorf("ecc with procfs: %+v", r)
	}
	if r := one(t, rep, "pcie_link", gpu3); r.Status != OK {
		t.Errorf("pcie with procfs: %+v", r)
	}
}
