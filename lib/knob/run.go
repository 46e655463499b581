package knob

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
	"gpuprep/lib/isolate"
	"gpuprep/lib/topo"
)

// Run is what a knob gets from the run that builds it, as data: the node
// (its files, the CPUs in scope, the GPU backend), the job (its user, its
// profile's settings) and what is resolved once per run and shared by
// every knob (the online CPUs, the node's topology, the housekeeping
// CPUs). Catalog makes one per run and passes it to every Def.New; no knob
// builds another knob or rediscovers what Run holds.
type Run struct {
	env  Env
	f    files
	cpus *cpuScope
	ctl  gpuControl
	devs map[string]gpu.Device // the job's GPUs by UUID, and by their MIG devices' UUIDs
	// job says the run is a job's (Catalog): without one (GPUKnobs,
	// NodeKnobs) knobs that serve the job's user only check the node.
	job bool

	topoOnce sync.Once
	topo     *topo.Node
	topoErr  error

	hkOnce sync.Once
	hk     cpuset.Set
	hkSet  bool
	hkErr  error
}

// newRun resolves env for the knobs of one run, over f (env.Root, or a
// test's files wrapping it).
func newRun(env Env, f files) *Run {
	r := &Run{env: env, f: f, cpus: newCPUScope(f, env.CPUs), devs: map[string]gpu.Device{}}
	if env.GPU != nil {
		r.ctl = controlOf(env.GPU)
	}
	for _, d := range env.GPUs {
		r.devs[d.UUID] = d
		for _, m := range d.MIG.Devices {
			if m.UUID != "" {
				r.devs[m.UUID] = d // a MIG device's knob reads its GPU
			}
		}
	}
	return r
}

// Root is the node's root (host.Root): "" Dir for files that are no tree.
func (r *Run) Root() host.Root {
	if d, ok := r.f.(interface{ Dir() string }); ok {
		return host.NewRoot(d.Dir())
	}
	return host.Root{}
}

// Log is the run's log (Env.Isolation.Log); never nil.
func (r *Run) Log() *slog.Logger {
	if r.env.Isolation.Log != nil {
		return r.env.Isolation.Log
	}
	return slog.New(slog.DiscardHandler)
}

// Isolation is the node's [isolation] options.
func (r *Run) Isolation() isolate.Options { return r.env.Isolation }

// Job is the job's user (SLURM_JOB_USER, SLURM_JOB_UID, SLURM_JOB_GID):
// name "" when there is no job or it is not known, uid and gid -1 when
// unknown.
func (r *Run) Job() (user string, uid, gid int) { return r.env.User, r.env.UID, r.env.GID }

// Setting is a setting of the job's profile, in canonical form (as Desired
// takes it); ok false when the profile leaves it unset or there is no
// profile (an epilog).
func (r *Run) Setting(name string) (string, bool) {
	if r.env.Settings == nil {
		return "", false
	}
	return r.env.Settings(name)
}

// Topology is the node's CPU topology (lib/topo), discovered once per run
// and only when a knob asks.
func (r *Run) Topology() (*topo.Node, error) {
	r.topoOnce.Do(func() {
		root := r.Root()
		if root.Dir() == "" {
			r.topoErr = fmt.Errorf("no root directory: %w", ErrUnsupported)
			return
		}
		r.topo, r.topoErr = topo.Discover(root, nil, topo.Options{})
	})
	return r.topo, r.topoErr
}

// Housekeeping is the job's profile's housekeeping_cpus resolved on this
// node (once per run): ok false where the profile sets none. An explicit
// CPU list must be online; N cores per NUMA node or socket are found from
// the node's topology.
func (r *Run) Housekeeping() (set cpuset.Set, ok bool, err error) {
	r.hkOnce.Do(func() {
		spec, set := r.Setting(housekeepingName)
		if !set {
			return
		}
		r.hk, r.hkErr = r.ResolveHousekeeping(spec)
		r.hkSet = r.hkErr == nil
	})
	return r.hk, r.hkSet, r.hkErr
}

// ResolveHousekeeping resolves a housekeeping_cpus setting on this node:
// an explicit CPU list must be online; N cores per NUMA node or socket
// come from the topology (Topology). "" is the empty set.
func (r *Run) ResolveHousekeeping(setting string) (cpuset.Set, error) {
	spec, err := isolate.ParseSpec(setting)
	if err != nil || spec == "" {
		return cpuset.Set{}, err
	}
	n := &topo.Node{}
	if strings.Contains(string(spec), ":") && r.Root().Dir() != "" {
		// Whole cores: the node's topology.
		if n, err = r.Topology(); err != nil {
			return cpuset.Set{}, err
		}
	} else {
		// A CPU list: only the online CPUs are needed.
		online, err := topo.OnlineCPUs(r.f)
		if err != nil {
			return cpuset.Set{}, err
		}
		for _, c := range online.List() {
			n.CPUs = append(n.CPUs, topo.CPU{ID: c})
		}
	}
	return isolate.Housekeeping(spec, n)
}

// gpuBase is the common part of the GPU knob id (scope "gpu:<uuid>"); a
// MIG device's knob (scope "gpu:MIG-<uuid>") gets its GPU's index.
func (r *Run) gpuBase(id ID) gpuKnob {
	uuid, _ := id.GPU()
	d, ok := r.devs[uuid]
	if !ok {
		d.Index = -1
	}
	return gpuKnob{id: id, b: r.ctl, index: d.Index, run: r}
}
