package knob

import (
	"gpuprep/lib/cpuset"
	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
	"gpuprep/lib/isolate"
	"gpuprep/lib/rundir"
)

// Env is what Catalog needs to know of the node and the job.
type Env struct {
	Root host.Root
	// CPUs are the CPUs the per-CPU knobs cover; empty means the online
	// CPUs (/sys/devices/system/cpu/online, read once).
	CPUs cpuset.Set
	// GPU is the backend of the GPU knobs (a gpu.Backend); nil for none.
	GPU gpu.Backend
	// GPUs are the job's GPUs: each gets its own GPU knobs, and each of
	// its MIG devices with a UUID (Device.MIG) the knobs that apply to
	// MIG devices (Def.MIG: mps), scoped by the MIG UUID.
	GPUs []gpu.Device
	// Isolation is the [isolation] options housekeeping_cpus takes (units
	// never confined, the journal of systemd units) and irq_affinity its log.
	Isolation isolate.Options
	// User, UID and GID are the job's user (SLURM_JOB_USER, SLURM_JOB_UID,
	// SLURM_JOB_GID; UID and GID -1 when unknown), whom the mps knob's
	// daemons serve; User "" when there is no job or it is not known.
	User     string
	UID, GID int
	// MPS is how the mps knob runs its daemons (mps.go).
	MPS MPSEnv
	// Settings gives the job's profile's settings in canonical form (as
	// Desired takes them; config.Knobs.Setting): knobs that depend on
	// another setting of the profile (irq_affinity on housekeeping_cpus)
	// read it through Run. nil: no profile (an epilog).
	Settings func(name string) (string, bool)
	// RunDir is gpuprep's run directory as the hook opened it for this
	// run (lib/rundir; also given to Isolation when it has none): the mps
	// knob's daemons' directories, irq_affinity's list and the units'
	// marks are kept there. nil: each knob opens it for each use.
	RunDir *rundir.Dir
}

// Catalog returns every knob in scope: the node knobs (NodeKnobNames
// order, see the registry), then each listed GPU's knobs (GPUKnobNames
// order) when env.GPU is set, each followed by its MIG devices' knobs
// (Def.MIG). Knobs absent on the node are included; their Read says
// ErrUnsupported. Building it reads at most the online CPU list.
func Catalog(env Env) []Knob {
	if env.Isolation.RunDir == nil {
		env.Isolation.RunDir = env.RunDir
	}
	r := newRun(env, env.Root)
	r.job = true
	out := r.nodeKnobs()
	if env.GPU != nil {
		for _, d := range env.GPUs {
			out = append(out, r.gpuKnobs(d)...)
			out = append(out, r.migKnobs(d)...)
		}
	}
	return out
}

// NodeKnobs returns the node knobs over root for cpus (empty: the online
// CPUs).
func NodeKnobs(root host.Root, cpus cpuset.Set) []Knob {
	return nodeKnobs(root, cpus)
}

// Find returns the knob with the given ID, or nil.
func Find(knobs []Knob, id ID) Knob {
	for _, k := range knobs {
		if k.ID() == id {
			return k
		}
	}
	return nil
}

// ByName returns the knobs with the given key name, one per scope, in
// order.
func ByName(knobs []Knob, name string) []Knob {
	var out []Knob
	for _, k := range knobs {
		if k.ID().Name == name {
			out = append(out, k)
		}
	}
	return out
}

// ByScope returns the knobs of one scope (NodeScope, or GPUScope(uuid)),
// in order.
func ByScope(knobs []Knob, scope string) []Knob {
	var out []Knob
	for _, k := range knobs {
		if k.ID().Scope == scope {
			out = append(out, k)
		}
	}
	return out
}
