package knob

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"gpuprep/lib/host"
	"gpuprep/lib/isolate"
	"gpuprep/lib/topo"
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
// It is a Rebaser: the baseline it leaves and the undo of each change are
// per cgroup always (isolate.Rebase), the cgroups gpuprep wrote each with
// what it held before, so a restore never writes a cgroup that appeared
// during the job (isolate.Named says what an older, uniform baseline
// writes).
//
// It is unsupported where the node has no usable cpuset controller or no
// service cgroup to confine.
type housekeepingKnob struct {
	id   ID
	f    files
	root host.Root
	opt  isolate.Options
	// h and hErr are the hierarchy opened by the first call (Read,
	// Rebase, Apply of one run): where slurmd and the jobs run is looked
	// up once per knob (a /proc scan and a walk of the cgroup tree), not
	// once per call. Targets still lists the units afresh each time.
	h    *isolate.Hierarchy
	hErr error
}

func init() {
	register(Def{
		Name: "housekeeping_cpus", Scope: ScopeNode, Order: 200, Example: `"0-3"`,
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
		node: func(f files, sc *cpuScope) Knob { return newHousekeeping(f, sc.isolation) },
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

func newHousekeeping(f files, opt isolate.Options) *housekeepingKnob {
	k := &housekeepingKnob{id: ID{Name: "housekeeping_cpus", Scope: NodeScope}, f: f, opt: opt}
	if d, ok := f.(interface{ Dir() string }); ok {
		k.root = host.NewRoot(d.Dir())
	}
	return k
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
	if k.root.Dir() == "" {
		return nil, fmt.Errorf("%s: no root directory: %w", k.id, ErrUnsupported)
	}
	h, err := isolate.Open(k.root)
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

// Read reads cpuset.cpus of every cgroup to confine.
func (k *housekeepingKnob) Read() (Value, error) {
	st, err := k.read()
	if err != nil {
		return "", err
	}
	return Value(st.Format()), nil
}

// Desired resolves the setting on this node: an explicit CPU list must be
// online; N cores per NUMA node or socket are found from the node's
// topology (lib/topo).
func (k *housekeepingKnob) Desired(setting string) (Value, error) {
	spec, err := isolate.ParseSpec(setting)
	if err != nil {
		return "", fmt.Errorf("%s: %w", k.id, err)
	}
	if spec == "" {
		return "", nil
	}
	n := &topo.Node{}
	switch {
	case strings.Contains(string(spec), ":") && k.root.Dir() != "":
		// Whole cores: the node's topology.
		if n, err = topo.Discover(k.root, nil, topo.Options{}); err != nil {
			return "", fmt.Errorf("%s: %w", k.id, err)
		}
	default:
		// A CPU list: only the online CPUs are needed.
		online, err := topo.OnlineCPUs(k.f)
		if err != nil {
			return "", fmt.Errorf("%s: %w", k.id, err)
		}
		for _, c := range online.List() {
			n.CPUs = append(n.CPUs, topo.CPU{ID: c})
		}
	}
	set, err := isolate.Housekeeping(spec, n)
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

// Merge joins two per-cgroup baselines (isolate.MergeBaselines).
func (k *housekeepingKnob) Merge(older, newer Value) (Value, error) {
	v, err := isolate.MergeBaselines(string(older), string(newer))
	if err != nil {
		return "", fmt.Errorf("%s: %w", k.id, err)
	}
	return Value(v), nil
}

// Holds says whether the cgroups hold v now, per cgroup or uniform
// (isolate.Holds).
func (k *housekeepingKnob) Holds(v Value) (bool, error) {
	now, err := k.read()
	if err != nil {
		return false, err
	}
	ok, err := isolate.Holds(now, string(v))
	if err != nil {
		return false, fmt.Errorf("%s: %w", k.id, err)
	}
	return ok, nil
}

// Rebase reads every target's cpuset.cpus and returns the per-cgroup
// baseline to keep and the per-cgroup undo of changing them to to
// (isolate.Rebase).
func (k *housekeepingKnob) Rebase(to Value, recorded, held *Value) (baseline, undo Value, err error) {
	now, err := k.read()
	if err != nil {
		return "", "", err
	}
	b, u, err := isolate.Rebase(now, string(to), (*string)(recorded), (*string)(held))
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", k.id, err)
	}
	return Value(b), Value(u), nil
}

// Restoring is what restoring to writes while held is in force: a
// per-cgroup value as it is; a uniform one only to the cgroups that hold
// held now (isolate.Named).
func (k *housekeepingKnob) Restoring(to, held Value) (Value, bool, error) {
	if strings.Contains(string(to), "=") {
		return to, true, nil
	}
	now, err := k.read()
	if err != nil {
		return "", false, err
	}
	h := string(held)
	named, err := isolate.Named(now, string(to), &h)
	if err != nil {
		return "", false, fmt.Errorf("%s: %w", k.id, err)
	}
	return Value(named.FormatPerCgroup()), len(named) > 0, nil
}

var _ Rebaser = (*housekeepingKnob)(nil)
