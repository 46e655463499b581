// Package config reads gpuprep's configuration, /etc/gpuprep/gpuprep.toml:
// general settings, per-job profile selection, gres.conf naming, the values
// to restore when no baseline was recorded, named tuning profiles with
// inheritance, and the expected MIG layout.
//
// A file is laid over the built-in configuration (defaults.toml, embedded):
// every key it leaves out keeps its built-in value, maps (gres.type_names,
// mig.layout) and [defaults] merge entry by entry, and a profile the file
// defines replaces the built-in profile of the same name as a whole. Unknown
// keys, wrong types and out-of-range values are errors naming the file, line
// and key. examples/gpuprep.toml documents every key.
package config

import (
	"fmt"
	"strings"
	"time"

	"gpuprep/lib/srunconf"
)

// DefaultPath is where the programs look for the configuration when no
// --config is given. Load falls back to the built-in defaults only for this
// path.
const DefaultPath = "/etc/gpuprep/gpuprep.toml"

// Config is a whole configuration: the file laid over the built-in defaults.
type Config struct {
	General   GeneralSection           `toml:"general"`
	Selection SelectionSection         `toml:"selection"`
	Gres      GresSection              `toml:"gres"`
	Defaults  Knobs                    `toml:"defaults"` // restored when no baseline was recorded
	Profiles  map[string]ProfileSpec   `toml:"profiles"` // as written; use Profile for the resolved one
	MIG       MIGSection               `toml:"mig"`
	Health    HealthSection            `toml:"health"`
	Isolation IsolationSection         `toml:"isolation"`
	Evidence  EvidenceSection          `toml:"evidence"`
	Srunwrap  srunconf.SrunwrapSection `toml:"srunwrap"`
	NCCL      srunconf.NCCLSection     `toml:"nccl"`

	// File is the file the configuration came from ("defaults.toml" for the
	// built-in one).
	File string `toml:"-"`
}

// GeneralSection is [general]: where state, logs and metrics go, and how long
// a prolog or epilog may run.
type GeneralSection struct {
	StateDir    string        `toml:"state_dir"`    // spool: baseline, journal, drift records, locks
	LogFile     string        `toml:"log_file"`     // appended to, besides syslog; "" for none
	LogLevel    string        `toml:"log_level"`    // debug|info|warn|error
	Deadline    time.Duration `toml:"deadline"`     // whole prolog/epilog run, a duration string
	MetricsDir  string        `toml:"metrics_dir"`  // node_exporter textfile directory: "auto" (found at each run, lib/textfiledir), "" for none, or a path
	DrainReason bool          `toml:"drain_reason"` // also set the node's drain reason with scontrol
	GPUBackend  string        `toml:"gpu_backend"`  // auto|nvml|procfs|none|mock:<name>
	// DeadJobGrace: a job whose Slurm cgroup is gone counts as dead (its
	// epilog never ran) only once its prolog is this old.
	DeadJobGrace time.Duration `toml:"dead_job_grace"`
	// MaxJobAge: a job whose prolog ran longer ago than this counts as
	// dead whatever else says; 0 = never by age.
	MaxJobAge time.Duration `toml:"max_job_age"`
}

// SelectionSection is [selection]: how a job picks its profile.
type SelectionSection struct {
	DefaultProfile   string   `toml:"default_profile"`   // used when the job names none (or a bad one)
	AllowedProfiles  []string `toml:"allowed_profiles"`  // names a job may pick; "*" = every profile
	ConstraintPrefix string   `toml:"constraint_prefix"` // --constraint=<prefix><name>; "" disables
	CommentKey       string   `toml:"comment_key"`       // --comment=<key>=<name>; "" disables
	// UnfitProfile is what the prolog does when the profile a job chose
	// cannot be applied on this node (a required knob the GPU refuses):
	// UnfitDefault, UnfitDrop or UnfitFail. A user's choice never drains a
	// node unless the admin asks for it with UnfitFail.
	UnfitProfile string `toml:"unfit_profile"`
}

// selection.unfit_profile values.
const (
	UnfitDefault = "default" // run the job with selection.default_profile
	UnfitDrop    = "drop"    // apply the job's profile without its required list
	UnfitFail    = "fail"    // fail the prolog (Slurm drains the node)
)

// GresSection is [gres]: how gpuprep-gres names GPUs in gres.conf.
type GresSection struct {
	Name         string            `toml:"name"`           // GRES name, "gpu"
	TypeNames    map[string]string `toml:"type_names"`     // Slurm's autodetected type -> site name
	NUMAAsSocket Tristate          `toml:"numa_as_socket"` // node line's sockets: true NUMA nodes, false real ones, "auto" as slurmd counts (slurm.conf's SlurmdParameters)
	// Conf is the gres.conf slurmd reads, for the hooks to tell which GPUs
	// SLURM_JOB_GPUS are; "auto" means the one beside SLURM_CONF, else
	// /etc/slurm/gres.conf.
	Conf string `toml:"conf"`
	// MPSGPUs are the GPUs gpuprep-gres gives a Name=mps record (Slurm's
	// gres/mps: jobs share them through MPS): "none", "all", a GPU model
	// or type, or a list of GPU indexes, models and types (gresmps.go).
	MPSGPUs GPUSelection `toml:"mps_gpus"`
	// MPSCount is each marked GPU's gres/mps Count= (100: a job's share
	// reads as a percentage).
	MPSCount int `toml:"mps_count"`
}

// IsolationSection is [isolation]: node-wide settings of the
// housekeeping_cpus knob (a profile says which CPUs; this says which
// services).
type IsolationSection struct {
	// Exclude names service cgroups never confined to the housekeeping
	// CPUs: unit names or path.Match patterns ("munge.service",
	// "docker-*.scope"). slurmd and Slurm's job cgroups never are.
	Exclude []string `toml:"exclude"`
	// IRQs is refused when true: the profile knob irq_affinity places
	// interrupts (a key of earlier releases, documented as not
	// implemented).
	IRQs bool `toml:"irqs"`
}

// EvidenceSection is [evidence]: the per-job record of what the job's GPUs
// did (energy, throttling, errors), written by the epilog to
// <state_dir>/jobs/<jobid>-<start>.json (lib/evidence).
type EvidenceSection struct {
	Enabled  bool `toml:"enabled"`   // read the job's GPUs' counters at both ends and write the record
	KeepDays int  `toml:"keep_days"` // records older than this are removed (oldest first); 0: kept whatever their age
	KeepMB   int  `toml:"keep_mb"`   // the records together take at most this many MiB; 0: no bound
}

// Tristate is true, false or "auto".
type Tristate string

// Tristate values.
const (
	Auto  Tristate = "auto"
	True  Tristate = "true"
	False Tristate = "false"
)

// UnmarshalTOML accepts a TOML boolean or one of the strings "auto", "true",
// "false".
func (t *Tristate) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case bool:
		*t = False
		if v {
			*t = True
		}
		return nil
	case string:
		switch s := Tristate(v); s {
		case Auto, True, False:
			*t = s
			return nil
		}
	}
	return fmt.Errorf(`must be true, false or "auto"`)
}

// TypeName returns the gres.conf Type for a GPU whose type Slurm's autodetect
// would call autodetected: its type_names entry (keys match
// case-insensitively), or autodetected itself.
func (g GresSection) TypeName(autodetected string) string {
	if v, ok := g.TypeNames[autodetected]; ok {
		return v
	}
	for k, v := range g.TypeNames {
		if strings.EqualFold(k, autodetected) {
			return v
		}
	}
	return autodetected
}
