// Package gpu is gpuprep's one view of a node's NVIDIA GPUs. Three backends
// implement Backend: nvml (go-nvml, the full picture, needs libnvidia-ml),
// procfs (/proc/driver/nvidia and sysfs only: fast, read-only, no NVML) and
// mock (go-nvml's dgx mock servers completed to match a fixture root).
package gpu

import (
	"errors"

	"gpuprep/lib/cpuset"
)

// ErrUnsupported marks a query or setting this backend or GPU cannot answer
// (NVML's NOT_SUPPORTED, or a procfs backend asked for clocks). Callers report
// it and go on; it is never a node failure by itself.
var ErrUnsupported = errors.New("not supported")

// ErrReadOnly is returned by setters of a read-only backend (procfs).
var ErrReadOnly = errors.New("backend is read-only")

// Device is what gpuprep knows of one GPU at inventory time.
type Device struct {
	Index int    `json:"index"` // NVML index (procfs: position in bus order); Devices() sorts by BusID, so Index follows PCI bus order
	Minor int    `json:"minor"` // /dev/nvidia<Minor>; not always equal to Index
	UUID  string `json:"uuid"`  // "GPU-8c2e..."
	BusID string `json:"bus_id"`
	// BusID is the PCI address, canonical: 4-hex-digit domain, lower case
	// ("0000:18:00.0"). Use CanonicalBusID on anything read from NVML.
	Name string `json:"name"` // product name as NVML reports it: "NVIDIA H100 80GB HBM3"

	// NUMANode is the GPU's PCI numa_node (-1 when the platform does not
	// say, as in most VMs).
	NUMANode int `json:"numa_node"`
	// CPUAffinity is the set of CPUs local to the GPU: the PCI device's
	// local_cpulist (what NVML's CPU affinity is made of), else NVML's
	// nvmlDeviceGetCpuAffinity. Empty when unknown.
	CPUAffinity cpuset.Set `json:"cpu_affinity"`
	// MemoryNUMANodes lists CPU-less NUMA nodes holding this GPU's memory
	// (Grace Hopper): the node of the driver's
	// /proc/driver/nvidia/gpus/<bus>/numa_status. Empty elsewhere.
	MemoryNUMANodes []int `json:"memory_numa_nodes,omitempty"`

	// NVLinks[j] is the number of active NVLinks between this GPU and the
	// GPU with Index j, -1 at j == Index; links through NVSwitches count
	// towards every GPU reachable through them, as `nvidia-smi topo -m`
	// shows. Nil when the backend cannot tell (procfs).
	NVLinks []int `json:"nvlinks"`

	MIG MIGState `json:"mig"`
}

// MIGState is a GPU's MIG mode and instances.
//
// procfs cannot read the mode: Capable is "the driver made
// /proc/driver/nvidia/capabilities/gpu<minor>/mig", Current and Pending are
// "GPU instances exist", so a GPU in MIG mode without instances reads as off.
type MIGState struct {
	Capable bool `json:"capable"`
	Current bool `json:"current"` // MIG mode in force now
	Pending bool `json:"pending"` // MIG mode after the next GPU reset
	// Devices are the MIG devices (a GPU instance with a compute instance),
	// sorted by GI then CI id.
	Devices []MIGDevice `json:"devices,omitempty"`
}

// MIGDevice is one GPU instance / compute instance pair.
type MIGDevice struct {
	Profile    string `json:"profile"` // "3g.40gb"; "" when the backend cannot tell (procfs)
	GI         int    `json:"gi"`
	CI         int    `json:"ci"`
	UUID       string `json:"uuid,omitempty"`
	GICapMinor int    `json:"gi_cap_minor"` // /dev/nvidia-caps/nvidia-cap<N> for gpu<minor>/gi<GI>/access; -1 unknown
	CICapMinor int    `json:"ci_cap_minor"` // ... for gpu<minor>/gi<GI>/ci<CI>/access; -1 unknown
}

// ComputeMode is NVML's compute mode.
type ComputeMode string

const (
	ComputeDefault          ComputeMode = "default"
	ComputeExclusiveProcess ComputeMode = "exclusive_process"
	ComputeProhibited       ComputeMode = "prohibited"
)

// Settings are a GPU's tunable settings as read now. A field the backend
// cannot read is left at its zero value and named in Unsupported.
type Settings struct {
	Persistence    bool        `json:"persistence"`
	ComputeMode    ComputeMode `json:"compute_mode"`
	AppClockSMMHz  uint32      `json:"app_clock_sm_mhz"`
	AppClockMemMHz uint32      `json:"app_clock_mem_mhz"`
	PowerLimitMW   uint32      `json:"power_limit_mw"`
	DefaultPowerMW uint32      `json:"default_power_limit_mw"`
	ECCEnabled     bool        `json:"ecc_enabled"`
	ECCPending     bool        `json:"ecc_pending"`
	Unsupported    []string    `json:"unsupported,omitempty"` // names of the fields above that are unknown
}

// Health is a GPU's error counters.
type Health struct {
	ECCVolatileUncorrected  uint64   `json:"ecc_volatile_uncorrected"`
	ECCAggregateUncorrected uint64   `json:"ecc_aggregate_uncorrected"`
	RetiredPagesPending     bool     `json:"retired_pages_pending"`
	RetiredPages            int      `json:"retired_pages"`
	RemappedRowsPending     bool     `json:"remapped_rows_pending"`
	RemappingFailed         bool     `json:"remapping_failed"`
	Unsupported             []string `json:"unsupported,omitempty"`
}

// Backend is a source of GPU facts and, for nvml and mock, a way to change
// GPU settings. Indexes are Device.Index values.
type Backend interface {
	// Name is "nvml", "procfs" or "mock:<model>".
	Name() string
	// Devices lists the node's GPUs sorted by PCI bus id.
	Devices() ([]Device, error)
	// Settings reads the tunable settings of one GPU.
	Settings(index int) (Settings, error)
	// Health reads the error counters of one GPU.
	Health(index int) (Health, error)

	SetPersistence(index int, on bool) error
	SetComputeMode(index int, mode ComputeMode) error
	// SetApplicationClocks sets application clocks; ResetApplicationClocks
	// returns them to the default.
	SetApplicationClocks(index int, memMHz, smMHz uint32) error
	ResetApplicationClocks(index int) error
	// SetLockedClocks locks the SM clock to a range; ResetLockedClocks
	// unlocks it. NVML has no getter for locked clocks, so Settings does
	// not show them: restore by resetting.
	SetLockedClocks(index int, minMHz, maxMHz uint32) error
	ResetLockedClocks(index int) error
	SetPowerLimit(index int, milliwatts uint32) error

	// Close releases the backend (nvml.Shutdown).
	Close() error
}
