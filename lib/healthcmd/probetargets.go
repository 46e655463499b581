package healthcmd

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"gpuprep/lib/bind"
	"gpuprep/lib/config"
	"gpuprep/lib/cuda"
	"gpuprep/lib/gpu"
	"gpuprep/lib/health"
	"gpuprep/lib/host"
	"gpuprep/lib/probe"
	"gpuprep/lib/probetools"
)

// openCUDA opens the CUDA driver the probes use: libcuda.so.1. A build
// with -tags gpuprep_mock answers a mock GPU backend with a fake driver
// over the mock's GPUs (cuda_mock.go).
var openCUDA = func(backend string, root host.Root, devs []gpu.Device) (cuda.Driver, error) { return cuda.Open() }

// probeSpan is how long each measurement runs (0: lib/probe's default);
// tests of a fake driver shorten it.
var probeSpan time.Duration

// measure probes the GPUs no process uses (refuseBusy) and judges the
// result.
func measure(ctx context.Context, f *healthFlags, cfg *config.Config, models health.Models, b gpu.Backend, run *probeRun, log *slog.Logger) (*probe.Verdict, error) {
	devs, err := b.Devices()
	if err != nil {
		return nil, err
	}
	root := f.common.HostRoot()
	free, forced := refuseBusy(root, b, devs, f.force, run)
	if len(free) == 0 {
		run.Why = "no GPU to probe"
		return nil, errNotNow
	}
	restore, err := cudaEnvironment()
	if err != nil {
		return nil, err
	}
	defer restore()
	drv, err := openCUDA(b.Name(), root, devs)
	if err != nil {
		return nil, fmt.Errorf("probes need the CUDA driver: %w", err)
	}
	o := probe.Options{Driver: drv, Targets: targets(root, b, free), Sample: sampler(root, b, free), Span: probeSpan, Log: log}
	if root.IsHost() {
		// A fixture root's NUMA nodes are not this machine's.
		o.BindMemory, o.MemoryNode = bind.BindThreadMemory, bind.PageNode
	}
	res, err := probe.Run(ctx, o)
	if err != nil {
		return nil, err
	}
	v := judge(root, b, cfg, models, res, run.Node, forced)
	if cfg.Health.ProbeTools {
		runTools(ctx, root, v, len(free), log)
	}
	return v, nil
}

// toolsPath is where the optional tools are looked for besides PATH (the
// timer's and slurmd's PATH may be short).
const toolsPath = "/usr/bin:/usr/local/bin:/usr/local/cuda/bin:/usr/local/nccl-tests/bin"

// runTools runs the optional tools that are installed (DCGM's diagnostic,
// nccl-tests' all_reduce_perf over the probed GPUs, perftest's
// ib_write_bw loopback of each HCA in /sys/class/infiniband) and adds
// their results and findings to v. A tool that could not run is logged
// and kept in its result, never a finding: it says nothing of the node.
func runTools(ctx context.Context, root host.Root, v *probe.Verdict, gpus int, log *slog.Logger) {
	tools := probetools.Find(os.Getenv("PATH") + ":" + toolsPath)
	if len(tools) == 0 {
		return
	}
	v.Tools = probetools.Run(ctx, tools, probetools.Options{GPUs: gpus, HCAs: hcas(root), Log: log})
	bus := map[int]string{}
	for _, g := range v.Result.GPUs {
		bus[g.Index] = g.BusID
	}
	for _, x := range probetools.Judge(v.Tools, probetools.Floors{}) {
		if x.Code == probetools.CodeToolFailed {
			log.Warn("probe tool did not run", "reason", x.Reason)
			continue
		}
		x.BusID = bus[x.GPU]
		v.Findings = append(v.Findings, x)
	}
	v.Pass = len(v.Findings) == 0
}

// hcas are the InfiniBand devices (/sys/class/infiniband).
func hcas(root host.Root) []string {
	ents, err := os.ReadDir(root.Path("/sys/class/infiniband"))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// refuseBusy leaves out the GPUs processes use (NVML's running
// processes), unless force, and always those an MPS server serves (a probe
// would go through it) and those in MIG mode (CUDA sees their instances,
// not the GPU): forced says whether a busy GPU was probed.
func refuseBusy(root host.Root, b gpu.Backend, devs []gpu.Device, force bool, run *probeRun) (free []gpu.Device, forced bool) {
	lister, canList := gpu.As[gpu.ProcessLister](b)
	for _, d := range devs {
		why := ""
		var pids []int
		var err error
		if canList {
			pids, err = lister.Processes(d.Index)
		}
		switch {
		case d.MIG.Current:
			run.Refused = append(run.Refused, refusedGPU{d.Index, d.BusID, "MIG mode is on: the probes measure whole GPUs"})
			continue
		case !canList || err != nil:
			why = fmt.Sprintf("the processes using it cannot be listed (%s backend)", b.Name())
		case mpsServes(root, pids) != "":
			run.Refused = append(run.Refused, refusedGPU{d.Index, d.BusID, "an MPS server serves it (pid " + mpsServes(root, pids) + ")"})
			continue
		case len(pids) > 0:
			why = "used by pid " + joinInts(pids)
		}
		if why != "" && !force {
			run.Refused = append(run.Refused, refusedGPU{d.Index, d.BusID, why + " (--force probes it all the same)"})
			continue
		}
		forced = forced || why != ""
		free = append(free, d)
	}
	return free, forced
}

// mpsServes is the pid among pids that is an MPS server
// (/proc/<pid>/comm), "" when none is.
func mpsServes(root host.Root, pids []int) string {
	for _, p := range pids {
		comm, err := root.ReadString("/proc/" + strconv.Itoa(p) + "/comm")
		if err == nil && strings.HasPrefix(strings.TrimSpace(comm), "nvidia-cuda-mps") {
			return strconv.Itoa(p)
		}
	}
	return ""
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// cudaEnvironment makes the CUDA driver see every GPU by its own bus id
// and no MPS daemon: CUDA_VISIBLE_DEVICES and the MPS variables unset, and
// CUDA_MPS_PIPE_DIRECTORY an empty directory of its own (a control daemon
// in the default /tmp/nvidia-mps would otherwise take the probe's
// client). restore puts the environment back and removes the directory.
func cudaEnvironment() (restore func(), err error) {
	dir, err := os.MkdirTemp("", "gpuprep-probe-nomps-")
	if err != nil {
		return nil, fmt.Errorf("an empty MPS pipe directory for the probe: %w", err)
	}
	names := []string{"CUDA_VISIBLE_DEVICES", "CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "CUDA_DEVICE_ORDER"}
	saved := map[string]*string{}
	for _, n := range names {
		if v, ok := os.LookupEnv(n); ok {
			saved[n] = &v
		} else {
			saved[n] = nil
		}
		os.Unsetenv(n)
	}
	os.Setenv("CUDA_MPS_PIPE_DIRECTORY", dir)
	return func() {
		for n, v := range saved {
			if v == nil {
				os.Unsetenv(n)
			} else {
				os.Setenv(n, *v)
			}
		}
		os.RemoveAll(dir)
	}, nil
}

// targets describes each GPU to the probes: its NUMA node
// (/sys/bus/pci/devices/<bus>/numa_node), what its PCIe link is built
// for (max_link_speed, max_link_width) and its active NVLinks.
func targets(root host.Root, b gpu.Backend, devs []gpu.Device) []probe.Target {
	facts, hasFacts := gpu.As[gpu.FactsReader](b)
	out := make([]probe.Target, len(devs))
	for i, d := range devs {
		t := probe.Target{Index: d.Index, BusID: d.BusID, UUID: d.UUID, Name: d.Name, NUMANode: -1}
		if n, err := root.ReadInt("/sys/bus/pci/devices/" + d.BusID + "/numa_node"); err == nil && n >= 0 {
			t.NUMANode = n
		}
		if l, err := health.ReadPCIeLink(root, d.BusID); err == nil {
			t.LinkGen, t.LinkWidth = pcieGen(l.MaxGTs), l.MaxWidth
		}
		if hasFacts {
			if active, _, err := facts.NVLinks(d.Index); err == nil {
				t.NVLinks = active
			}
		}
		out[i] = t
	}
	return out
}

// pcieGen is the PCIe generation of a transfer rate in GT/s.
func pcieGen(gts float64) int {
	for gen, rate := range []float64{2.5, 5, 8, 16, 32, 64} {
		if gts > 0 && gts <= rate*1.01 {
			return gen + 1
		}
	}
	return 0
}

// sampler reads a GPU as it is loaded: its clocks and power (NVML) and
// its PCIe link now (sysfs current_link_speed and current_link_width).
func sampler(root host.Root, b gpu.Backend, devs []gpu.Device) func(int) (probe.Sample, error) {
	loads, hasLoad := gpu.As[gpu.LoadReader](b)
	bus := map[int]string{}
	for _, d := range devs {
		bus[d.Index] = d.BusID
	}
	return func(index int) (probe.Sample, error) {
		var s probe.Sample
		if hasLoad {
			if l, err := loads.Load(index); err == nil {
				s.SMClockMHz, s.MemClockMHz, s.PowerW = l.SMClockMHz, l.MemClockMHz, float64(l.PowerMW)/1000
			}
		}
		if l, err := health.ReadPCIeLink(root, bus[index]); err == nil {
			s.PCIeGen, s.PCIeWidth = pcieGen(l.GTs), l.Width
		}
		return s, nil
	}
}

// judge makes the verdict: each GPU held to the floors of its model
// ([health] probe_floor and probe_compute_ratio, the model file).
func judge(root host.Root, b gpu.Backend, cfg *config.Config, models health.Models, res *probe.Result, node string, forced bool) *probe.Verdict {
	policy := probe.Policy{Fraction: cfg.Health.ProbeFloor, ComputeRatio: cfg.Health.ProbeComputeRatio}
	floors := make([]probe.Floors, len(res.GPUs))
	for i, g := range res.GPUs {
		m, _ := models.For(g.Name)
		floors[i] = probe.FloorsFor(g, m.ProbeFloors(), policy)
	}
	v := &probe.Verdict{Time: time.Now().UTC(), Node: node, Forced: forced, Floors: floors, Result: res}
	v.BootID, _ = host.ReadBootID(root)
	if dr, ok := gpu.As[gpu.DriverReader](b); ok {
		v.Driver, _ = dr.DriverVersion()
	}
	v.Findings = probe.Judge(res, floors)
	v.Pass = len(v.Findings) == 0
	return v
}
