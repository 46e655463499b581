package gpu

import "time"

// NVML's accounting mode keeps, per process that used a GPU since the mode
// was turned on, its mean GPU and memory utilisation and its peak memory,
// in a circular buffer the driver holds (the gpu_accounting knob turns it
// on; the per-job evidence reads it). Turning the mode off clears every
// record. A GPU in MIG mode keeps it off and refuses to turn it on. Each
// capability is a small optional interface, asked for with As; a backend
// without it (procfs, none) cannot say.

// AccountingSetter reads and sets a GPU's accounting mode.
type AccountingSetter interface {
	// AccountingMode is nvmlDeviceGetAccountingMode.
	AccountingMode(index int) (bool, error)
	// SetAccountingMode is nvmlDeviceSetAccountingMode; off clears every
	// process's record.
	SetAccountingMode(index int, on bool) error
}

// AccountingReader reads the accounting records a GPU keeps.
type AccountingReader interface {
	// AccountingStats lists the processes the GPU keeps records of
	// (nvmlDeviceGetAccountingPids), running or ended, each with its
	// record (nvmlDeviceGetAccountingStats). ErrUnsupported where the
	// mode is off or the GPU has none.
	AccountingStats(index int) ([]ProcessAccounting, error)
}

// ProcessAccounting is one process's record (nvmlAccountingStats_t).
type ProcessAccounting struct {
	PID     int       `json:"pid"`
	Start   time.Time `json:"start"` // startTime: µs since the epoch
	Running bool      `json:"running"`
	// Duration is how long the process's compute context was active
	// (time, in ms); NVML reports 0 while the process runs.
	Duration time.Duration `json:"duration"`
	// GPUUtilPct and MemoryUtilPct are the shares of the process's life
	// during which a kernel ran and device memory was read or written,
	// in percent; NotAvailable where the GPU cannot tell.
	GPUUtilPct    int `json:"gpu_util_pct"`
	MemoryUtilPct int `json:"memory_util_pct"`
	// MaxMemoryBytes is the most device memory the process ever
	// allocated; 0 where the GPU cannot tell.
	MaxMemoryBytes uint64 `json:"max_memory_bytes"`
}

// NotAvailable is a utilisation NVML cannot tell
// (NVML_VALUE_NOT_AVAILABLE: the GPU has no utilisation counters).
const NotAvailable = -1
