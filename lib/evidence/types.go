// Package evidence is a job's evidence: what its GPUs did between the
// prolog and the epilog. The prolog takes a Snapshot of the job's GPUs'
// cumulative counters (gpu.Counters) after applying its settings; the
// epilog takes another before restoring, and Diff turns the two into a
// Record: energy, mean power, the share of the job's time each clock-event
// reason held the clocks down, and the errors that grew, per GPU and for
// the job. This package is pure (no files, no NVML): lib/evidence/evfile
// stores records, lib/hook takes the snapshots.
package evidence

import (
	"time"

	"gpuprep/lib/gpu"
)

// Format is the format of a Record file; a reader refuses a newer one.
const Format = 1

// Snapshot is the counters of a job's GPUs at one time.
type Snapshot struct {
	Time   time.Time     `json:"time"`
	BootID string        `json:"boot_id,omitempty"` // /proc/sys/kernel/random/boot_id
	Driver string        `json:"driver_version,omitempty"`
	GPUs   []GPUSnapshot `json:"gpus"`
}

// GPUSnapshot is one physical GPU's counters. Counters is nil when none
// could be read (Error says why).
type GPUSnapshot struct {
	UUID     string        `json:"uuid"`
	BusID    string        `json:"bus_id"`
	Index    int           `json:"index"`
	Name     string        `json:"name,omitempty"`
	Counters *gpu.Counters `json:"counters,omitempty"`
	Error    string        `json:"error,omitempty"`
}

// Job is who and what a record is of.
type Job struct {
	ID      string    `json:"id"`              // SLURM_JOB_ID
	SLUID   string    `json:"sluid,omitempty"` // SLURM_JOB_SLUID (Slurm 26.05 and later)
	User    string    `json:"user"`            // SLURM_JOB_USER
	UID     int       `json:"uid"`             // SLURM_JOB_UID
	Node    string    `json:"node"`            // the Slurm node name
	Profile string    `json:"profile,omitempty"`
	Start   time.Time `json:"start"` // when the prolog ran: with ID, it names the record (a requeued job keeps its id)
}

// Setting is a knob the prolog set for the job, as the report names it.
type Setting struct {
	Knob  string `json:"knob"`  // knob ID ("gpu_power_limit_mw@GPU-...")
	Value string `json:"value"` // the value it held for the job
}

// Record is a job's evidence on one node: the file the epilog writes (and
// the prolog, with Running set and no End, so that the job's user can ask
// how the job is doing while it runs).
type Record struct {
	Format  int  `json:"format"`
	Job     Job  `json:"job"`
	Running bool `json:"running,omitempty"`
	// Start and End are the prolog's and the epilog's snapshots.
	Start Snapshot  `json:"start"`
	End   *Snapshot `json:"end,omitempty"`
	// Shared says, by GPU UUID, why the GPU's figures are not the job's
	// alone: "MIG device of this job; other MIG devices share the GPU",
	// "MPS", "shared with job 123". A GPU not listed was the job's alone.
	Shared   map[string][]string `json:"shared,omitempty"`
	Settings []Setting           `json:"settings,omitempty"`
	Drift    []string            `json:"drift,omitempty"` // what drifted under the job (the epilog's drift record)
	Xids     []string            `json:"xids,omitempty"`  // the job's Xids, as the health check attributes them
	GPUs     []GPUResult         `json:"gpus,omitempty"`  // Diff(Start, End)
	Total    *Total              `json:"total,omitempty"`
	// Processes are the job's processes on its GPUs from NVML's
	// accounting mode (the gpu_accounting knob); nil where it was off.
	Processes []Process `json:"processes,omitempty"`
	Warnings  []string  `json:"warnings,omitempty"`
}

// Process is one process of the job on one GPU, as NVML's accounting mode
// keeps it (nvmlDeviceGetAccountingStats).
type Process struct {
	PID            int       `json:"pid"`
	GPU            string    `json:"gpu"` // UUID
	Start          time.Time `json:"start"`
	Seconds        float64   `json:"seconds"`
	GPUUtilPct     int       `json:"gpu_util_pct"`    // mean over its life
	MemoryUtilPct  int       `json:"memory_util_pct"` // mean over its life
	MaxMemoryBytes uint64    `json:"max_memory_bytes"`
}

// Throttle is how long a clock-event reason held a GPU's clocks down, and
// that time's share of the wall time between the snapshots.
type Throttle struct {
	Seconds float64 `json:"seconds"`
	Share   float64 `json:"share"` // 0..1
}

// GPUResult is what one GPU did between two snapshots. A figure that
// cannot be known (a counter missing at either end, or reset by a driver
// reload) is nil or absent and named in Missing or Reset: never zero.
type GPUResult struct {
	UUID  string `json:"uuid"`
	BusID string `json:"bus_id"`
	Index int    `json:"index"`
	Name  string `json:"name,omitempty"`
	// Attributable is false when the GPU was shared (Record.Shared): its
	// figures are the GPU's, not the job's alone.
	Attributable bool     `json:"attributable"`
	SharedWhy    []string `json:"shared,omitempty"`
	Seconds      float64  `json:"seconds"` // wall time between the snapshots
	EnergyJ      *float64 `json:"energy_j,omitempty"`
	MeanPowerW   *float64 `json:"mean_power_w,omitempty"`
	// Throttle is by clock-event counter (gpu.ThrottleCounters).
	Throttle map[gpu.Counter]Throttle `json:"throttle,omitempty"`
	// Errors are the error counters' growth (gpu.ErrorCounters), each
	// known counter listed, zero included.
	Errors  map[gpu.Counter]uint64 `json:"errors,omitempty"`
	Missing []gpu.Counter          `json:"missing,omitempty"`
	Reset   []gpu.Counter          `json:"reset,omitempty"`
	// DriverReloaded says why the driver is taken to have been reloaded
	// between the snapshots ("driver 550.54.15 -> 560.35.03", "node
	// rebooted (boot id changed)", "energy counter went backwards",
	// "energy counter jumped (...)"); every counter is then Reset, but the
	// remapped rows, which the GPU keeps.
	DriverReloaded string `json:"driver_reloaded,omitempty"`
	Error          string `json:"error,omitempty"` // counters unreadable at either end
}

// Total is the job's figures over its GPUs on this node: sums, and shares
// weighted by each GPU's time. A figure unknown on any GPU is nil, and
// Unknown names the GPUs that made it so.
type Total struct {
	GPUs       int                      `json:"gpus"`
	Seconds    float64                  `json:"seconds"`     // wall time of the job (between the snapshots)
	GPUSeconds float64                  `json:"gpu_seconds"` // sum over GPUs
	EnergyJ    *float64                 `json:"energy_j,omitempty"`
	EnergyKWh  *float64                 `json:"energy_kwh,omitempty"`
	MeanPowerW *float64                 `json:"mean_power_w,omitempty"` // per GPU, averaged
	Throttle   map[gpu.Counter]Throttle `json:"throttle,omitempty"`     // Share of GPUSeconds
	Errors     map[gpu.Counter]uint64   `json:"errors,omitempty"`       // summed over the GPUs where known (Unknown names the others)
	Unknown    []string                 `json:"unknown,omitempty"`      // "energy on GPU-..: missing"
}
