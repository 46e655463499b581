package knob

import (
	"errors"
	"fmt"
	"strconv"

	"gpuprep/lib/isolate"
)

// housekeepingKnob is housekeeping_cpus: the CPUs host services are
// confined to while jobs run (lib/isolate), through cpuset.cpus of the
// service cgroups (cgroup v2: the siblings of slurmstepd.scope, user.slice,
// init.scope; v1: the cpuset hierarchy outside slurm/). Its Value is
// isolate.State's canonical form: the one CPU list every confined cgroup
// holds ("0-3"; "" for none of their own), else each cgroup's
// ("init.scope=;system.slice/cron.service=0-3;..."). So a unit that stops
// during a job leaves the Value as it was, and a unit started during the
// job outside the housekeeping CPUs is drift. Apply restores a per-cgroup
// Value cgroup by cgroup, skipping those that vanished.
//
// It is part-wise (Def.PartWise, isolate.ValueForm): Read names every
// cgroup, plans compare the summed-up form, and the planner keeps the
// baseline and the undo of each change per cgroup, the cgroups gpuprep
// wrote each with what it held before, so a restore never writes a cgroup
// that appeared during the job.
//
// It is unsupported where the node has no usable cpuset controller or no
// service cgroup to confine.
type housekeepingKnob struct {
	id  ID
	run *Run
	opt isolate.Options
	// h and hErr are the hierarchy opened by the first call (Read,
	// Rebase, Apply of one run): where slurmd and the jobs run is looked
	// up once per knob (a /proc scan and a walk of the cgroup tree), not
	// once per call. Targets still lists the units afresh each time.
	h    *isolate.Hierarchy
	hErr error
}

func init() {
	Register(Def{
		Name: housekeepingName, Kind: NodeKind, Order: 200, Example: `"0-3"`,
		Doc: "host services confined to these CPUs (cpuset.cpus of the service cgroups under /sys/fs/cgroup); " +
			`a CPU list, {cores_per_numa = N} or {cores_per_socket = N} (whole cores, SMT siblings together), "" for all CPUs`,
		Decode: decodeHousekeeping,
		Writes: []string{
			"sys/fs/cgroup/cgroup.subtree_control",
			"sys/fs/cgroup/<*>/cgroup.subtree_control",
			"sys/fs/cgroup/<*>/cpuset.cpus",
			"sys/fs/cgroup/<*>/<*>/cpuset.cpus",
			// cgroup v1: the root cpuset's processes moved to and from
			// cpuset/gpuprep.housekeeping, made with the root's mems.
			"sys/fs/cgroup/<*>/cgroup.procs",
			"sys/fs/cgroup/<*>/<*>/cgroup.procs",
			"sys/fs/cgroup/<*>/<*>/cpuset.mems",
		},
		New:      func(r *Run, _ ID) Knob { return newHousekeeping(r) },
		PartWise: &isolate.ValueForm,
	})
}

// decodeHousekeeping takes a CPU list string, or a table with exactly one
// of cores_per_numa and cores_per_socket.
func decodeHousekeeping(raw any) (string, error) {
	switch v := raw.(type) {
	case string:
		s, err := isolate.ParseSpec(v)
		if err != nil {
			return "", errors.New(`must be a CPU list such as "0-3", {cores_per_numa = N} or {cores_per_socket = N}`)
		}
		return string(s), nil
	case map[string]any:
		if len(v) != 1 {
			return "", &ValueError{Msg: "must hold exactly one of cores_per_numa, cores_per_socket"}
		}
		for key, n := range v {
			if key != isolate.PerNUMA && key != isolate.PerSocket {
				return "", &ValueError{Key: key, Unknown: true}
			}
			i, ok := n.(int64)
			if !ok || i < 1 || i > isolate.MaxCoresPer {
				return "", &ValueError{Key: key, Msg: fmt.Sprintf("%s must be an integer 1..%d", key, isolate.MaxCoresPer)}
			}
			return key + ":" + strconv.FormatInt(i, 10), nil
		}
	}
	return "", errType(`a CPU list string or a table {cores_per_numa = N}`)
}

// housekeepingName is the knob's key.
const housekeepingName = "housekeeping_cpus"

func newHousekeeping(r *Run) *housekeepingKnob {
	return &housekeepingKnob{id: ID{Name: housekeepingName, Scope: NodeScope}, run: r, opt: r.Isolation()}
}

func (k *housekeepingKnob) ID() ID { return k.id }

// hierarchy opens the node's cpuset hierarchy, once per knob; none, or no
// cgroup to confine, is unsupported.
func (k *housekeepingKnob) hierarchy() (*isolate.Hierarchy, error) {
	if k.h == nil && k.hErr == nil {
		k.h, k.hErr = k.open()
	}
	return k.h, k.hErr
}

func (k *housekeepingKnob) open() (*isolate.Hierarchy, error) {
	root := k.run.Root()
	if root.Dir() == "" {
		return nil, fmt.Errorf("%s: no root directory: %w", k.id, ErrUnsupported)
	}
	h, err := isolate.Open(root)
	if errors.Is(err, isolate.ErrNoCpuset) {
		return nil, fmt.Errorf("%s: %v: %w", k.id, err, ErrUnsupported)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k.id, err)
	}
	targets, err := h.Targets(k.opt)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k.id, err)
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("%s: no service cgroup to confine under %s: %w", k.id, h.Mount(), ErrUnsupported)
	}
	return h, nil
}

// Read reads cpuset.cpus of every cgroup to confine, each cgroup named
// (the knob is part-wise).
func (k *housekeepingKnob) Read() (Value, error) {
	st, err := k.read()
	if err != nil {
		return "", err
	}
	return Value(st.FormatPerCgroup()), nil
}

// Desired resolves the setting on this node (Run.ResolveHousekeeping).
func (k *housekeepingKnob) Desired(setting string) (Value, error) {
	set, err := k.run.ResolveHousekeeping(setting)
	if err != nil {
		return "", fmt.Errorf("%s: %w", k.id, err)
	}
	return Value(set.String()), nil
}

// Apply writes the Value and reads every written cgroup back.
func (k *housekeepingKnob) Apply(v Value) error {
	h, err := k.hierarchy()
	if err != nil {
		return err
	}
	if _, err := h.Apply(k.opt, string(v), nil); err != nil {
		return fmt.Errorf("%s: %w", k.id, err)
	}
	return nil
}

// read reads what every target cgroup holds now, by cgroup.
func (k *housekeepingKnob) read() (isolate.State, error) {
	h, err := k.hierarchy()
	if err != nil {
		return nil, err
	}
	st, err := h.Read(k.opt)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k.id, err)
	}
	return st, nil
}
