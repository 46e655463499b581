// Package gpu is gpuprep's one view of a node's NVIDIA GPUs: the facts
// (Device, Settings, Health, MIGState), small interfaces over them, and the
// backends that need no library: procfs (/proc/driver/nvidia only: fast,
// read-only) and none. The NVML backend is in lib/gpu/nvmlgpu and the
// go-nvml mock servers in internal/gpumock; both register themselves with
// Register, so this package imports no go-nvml and a production binary
// carries no mock.
package gpu

import "errors"

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

// Fields selects which Settings a read fetches: each NVML query costs time
// (an application-clock read is about 6 ms per GPU on an H200), so a caller
// asks only for what it uses.
type Fields uint

// Settings fields.
const (
	FieldPersistence Fields = 1 << iota
	FieldComputeMode
	FieldAppClocks  // AppClockSMMHz and AppClockMemMHz
	FieldPowerLimit // PowerLimitMW and DefaultPowerMW
	FieldECC        // ECCEnabled and ECCPending
	FieldLimits     // MinPowerMW, MaxPowerMW, MaxSMClockMHz, MaxMemClockMHz
	AllFields       = FieldPersistence | FieldComputeMode | FieldAppClocks | FieldPowerLimit | FieldECC | FieldLimits
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
	// What this GPU model accepts: the power limit range and the highest
	// SM and memory clocks, so a profile's values are checked at plan time.
	MinPowerMW     uint32   `json:"min_power_limit_mw"`
	MaxPowerMW     uint32   `json:"max_power_limit_mw"`
	MaxSMClockMHz  uint32   `json:"max_sm_clock_mhz"`
	MaxMemClockMHz uint32   `json:"max_mem_clock_mhz"`
	ECCEnabled     bool     `json:"ecc_enabled"`
	ECCPending     bool     `json:"ecc_pending"`
	Unsupported    []string `json:"unsupported,omitempty"` // names of the fields above that are unknown
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

// The interfaces below are small on purpose, in the spirit of NVIDIA's
// go-nvlib: a backend implements what it can, and a caller asks for the one
// capability it needs (As). Indexes are Device.Index values.

// Inventory lists a node's GPUs. Where each GPU sits (NUMA node, local CPUs)
// is not a GPU backend's fact: lib/topo reads it from sysfs.
type Inventory interface {
	// Name is "nvml", "procfs", "none" or "mock:<model>".
	Name() string
	// Devices lists the node's GPUs sorted by PCI bus id.
	Devices() ([]Device, error)
}

// SettingsReader reads the tunable settings of one GPU.
type SettingsReader interface {
	// Settings reads the fields named in want (AllFields for every one);
	// fields not asked for are left at their zero value.
	Settings(index int, want Fields) (Settings, error)
}

// Setter changes one GPU's settings.
type Setter interface {
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
}

// HealthReader reads one GPU's error counters.
type HealthReader interface {
	Health(index int) (Health, error)
}

// MIGReader reads one GPU's MIG mode and devices (Device.MIG holds the same
// for every GPU at inventory time).
type MIGReader interface {
	MIG(index int) (MIGState, error)
}

// Backend is an open GPU backend: an inventory that may also implement
// SettingsReader, Setter, HealthReader and MIGReader.
type Backend interface {
	Inventory
	// Close releases the backend (nvml.Shutdown).
	Close() error
}

// As returns b's implementation of capability T (SettingsReader, Setter,
// HealthReader, MIGReader), or ok=false when b has none.
func As[T any](b Backend) (T, bool) {
	t, ok := b.(T)
	return t, ok
}

// Light asks b for its light mode where it has one (nvmlgpu.NVML.Light):
// GPUs listed from the driver's procfs files without NVML and without
// NVLinks, and NVML handles opened only for the GPUs then used. The prolog
// and epilog, which run before and after every job, use it.
func Light(b Backend) {
	if l, ok := b.(interface{ Light() }); ok {
		l.Light()
	}
}
