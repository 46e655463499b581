package health

import (
	"fmt"
	"sync"

	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
	"gpuprep/lib/nccl"
	"gpuprep/lib/topo"
)

// GPUFacts is what was read of one GPU. A field's error wraps
// gpu.ErrUnsupported when the backend or the GPU cannot tell.
type GPUFacts struct {
	Dev         gpu.Device
	Settings    gpu.Settings // persistence and ECC mode
	SettingsErr error
	Health      gpu.Health
	HealthErr   error
	Throttle    uint64
	ThrottleErr error
	LinksActive int
	LinksTotal  int
	LinksErr    error
	PCIe        PCIeLink
	PCIeErr     error
	// Recovery is the driver's recovery action for the GPU (the NVML
	// field NVML_FI_DEV_GET_GPU_RECOVERY_ACTION), read with the Xids.
	Recovery    gpu.RecoveryAction
	RecoveryErr error
}

// Facts is what the checks read of the node. Nothing in it is decided yet:
// Evaluate turns it into results.
type Facts struct {
	Backend    string
	NoBackend  string       // why --gpu-backend auto fell back to none (gpu.AutoFallback); "" otherwise
	Devices    []gpu.Device // every GPU the backend lists
	DevicesErr error
	OnBus      []string // NVIDIA display controllers on the PCI bus
	OnBusErr   error
	Driver     string
	DriverErr  error
	IB         []IBPort
	IBErr      error
	Swap       Swap
	SwapErr    error
	TopoCPUs   int
	TopoErr    error
	CMDQV      CMDQV
	GPUs       []GPUFacts // the GPUs in scope
	Whole      bool       // the scope is every GPU (whatever the backend lists)
	BootID     string
	Kmsg       KernelLog // the kernel log: its NVRM records, what was read and lost
	KmsgRead   bool
	KmsgErr    error
	// KmsgLost are the records this run should have seen but the log had
	// lost (State.Advance): XIDs in them are unknown.
	KmsgLost []Gap
	// Probe is the probes' saved verdict (check "probe").
	Probe ProbeFacts
}

// cannot is the error of a fact the backend has no reader for.
func cannot(b gpu.Backend, what string) error {
	name := "none"
	if b != nil {
		name = b.Name()
	}
	return fmt.Errorf("the %s GPU backend cannot read %s (needs NVML): %w", name, what, gpu.ErrUnsupported)
}

// Need says which facts a run reads: the checks it evaluates (a check off
// in [health.severity], or not configured, reads nothing), the NCCL
// topology file ("" none), and whether NVLinks are worth reading (an
// expected count is configured).
type Need struct {
	Checks   map[string]bool
	TopoFile string
	NVLinks  bool
}

// Gather reads the facts the needed checks use: node files and backend
// calls in parallel, and each GPU of scope in its own goroutine (NVML
// handles open in parallel, so eight GPUs cost about one). scope nil means
// every GPU the backend lists.
func Gather(r host.Root, b gpu.Backend, scope []gpu.Device, need Need) *Facts {
	f := &Facts{}
	c := need.Checks
	var wg sync.WaitGroup
	goRead := func(want bool, fn func()) {
		if !want {
			return
		}
		wg.Add(1)
		go func() { defer wg.Done(); fn() }()
	}
	if b != nil {
		f.Backend = b.Name()
		f.NoBackend, _ = gpu.AutoFallback(b)
		f.Devices, f.DevicesErr = b.Devices()
	}
	if scope == nil {
		scope, f.Whole = f.Devices, true
	}
	goRead(c["gpu_count"], func() { f.OnBus, f.OnBusErr = topo.NVIDIAGPUsOnBus(r) })
	goRead(c["driver_version"], func() {
		if dr, ok := gpu.As[gpu.DriverReader](b); ok && b != nil {
			f.Driver, f.DriverErr = dr.DriverVersion()
		} else {
			f.DriverErr = cannot(b, "the driver version")
		}
	})
	goRead(c["ib_ports"], func() { f.IB, f.IBErr = ReadIBPorts(r) })
	goRead(c["swap"], func() { f.Swap, f.SwapErr = ReadSwap(r) })
	goRead(c["cmdqv"], func() { f.CMDQV = ReadCMDQV(r) })
	goRead(c["nccl_topo"] && need.TopoFile != "", func() { f.TopoCPUs, f.TopoErr = nccl.CheckTopoFile(r, need.TopoFile) })
	goRead(c["xid"], func() {
		f.BootID, _ = host.ReadBootID(r)
		f.Kmsg, f.KmsgErr = ReadKmsg(r, "NVRM")
		f.KmsgRead = f.KmsgErr == nil
	})
	f.GPUs = make([]GPUFacts, len(scope))
	for i, d := range scope {
		goRead(true, func() { f.GPUs[i] = gatherGPU(r, b, d, need) })
	}
	wg.Wait()
	return f
}

// gatherGPU reads what the needed checks use of one GPU: Settings
// (persistence, ECC mode), Health, throttle reasons and NVLinks through the
// backend, and its PCIe link from sysfs.
func gatherGPU(r host.Root, b gpu.Backend, d gpu.Device, need Need) GPUFacts {
	c := need.Checks
	g := GPUFacts{Dev: d}
	if c["persistence"] || c["ecc_mode"] {
		if sr, ok := gpu.As[gpu.SettingsReader](b); ok && b != nil {
			g.Settings, g.SettingsErr = sr.Settings(d.Index, gpu.FieldPersistence|gpu.FieldECC)
		} else {
			g.SettingsErr = cannot(b, "persistence and ECC mode")
		}
	}
	if c["ecc_volatile"] || c["row_remap"] {
		if hr, ok := gpu.As[gpu.HealthReader](b); ok && b != nil {
			g.Health, g.HealthErr = hr.Health(d.Index)
		} else {
			g.HealthErr = cannot(b, "ECC counters")
		}
	}
	fr, ok := gpu.As[gpu.FactsReader](b)
	ok = ok && b != nil
	switch {
	case !(c["throttle"] || c["pcie_link"]):
	case ok:
		g.Throttle, g.ThrottleErr = fr.ThrottleReasons(d.Index)
	default:
		g.ThrottleErr = cannot(b, "throttle reasons")
	}
	switch {
	case !(c["nvlinks"] && need.NVLinks):
	case ok:
		g.LinksActive, g.LinksTotal, g.LinksErr = fr.NVLinks(d.Index)
	default:
		g.LinksErr = cannot(b, "NVLinks")
	}
	if c["pcie_link"] {
		g.PCIe, g.PCIeErr = ReadPCIeLink(r, d.BusID)
	}
	if c["xid"] {
		g.Recovery, g.RecoveryErr = readRecovery(b, d)
	}
	return g
}

// readRecovery reads the GPU's recovery action through the backend's
// gpu.RecoveryReader (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION); a backend
// without one cannot tell (gpu.ErrUnsupported).
func readRecovery(b gpu.Backend, d gpu.Device) (gpu.RecoveryAction, error) {
	rr, ok := gpu.As[gpu.RecoveryReader](b)
	if !ok || b == nil {
		return 0, cannot(b, "the recovery action")
	}
	return rr.RecoveryAction(d.Index)
}
