package knob

import (
	"fmt"
	"slices"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
	"gpuprep/lib/knobval"
	"gpuprep/lib/plan"
)

// The registry is the one list of knobs. Each knob's file registers a Def
// (in an init function) saying its configuration key, its scope, how a
// TOML value of that key is checked and turned into the setting Desired
// takes, and how to build the knob. The configuration (lib/config), the
// catalog, and the tests all derive their lists of knobs from it, so
// adding a knob is one file here (plus its test) and its documentation in
// examples/gpuprep.toml.

// Kind says whether a knob is node-wide or one per GPU.
type Kind int

// Kinds.
const (
	NodeKind Kind = iota // node-wide: one knob (CPU, memory, kernel), scope "node"
	GPUKind              // one knob per GPU of the job, scope "gpu:<uuid>"
)

func (k Kind) String() string {
	if k == GPUKind {
		return "gpu"
	}
	return "node"
}

// Def defines one knob.
type Def struct {
	// Name is the knob's key in the configuration and its ID's Name.
	Name string
	Kind Kind
	// Order places the knob among the others: the configuration, the
	// catalog and plans list knobs by ascending Order. It matters where one
	// knob's Apply affects another's (cpu_governor before
	// energy_performance_preference). By convention node knobs take
	// 10..999 and GPU knobs 1000 and up, in steps of 10.
	Order int
	// Doc says in one line what the knob reads and writes and what its
	// TOML value is.
	Doc string
	// Writes are the files a node knob writes, relative to the root
	// ("proc/sys/vm/swappiness"), "<N>" standing for a number
	// ("sys/devices/system/cpu/cpu<N>/cpufreq/scaling_governor"); nil for
	// GPU knobs, which go through the GPU backend. Tests snapshot these
	// files (internal/knobsnap).
	Writes []string
	// Example is a TOML value the key accepts, as written in a file
	// ("performance" in quotes, 10, [1980, 1980]); tests decode it.
	Example string
	// Decode checks a TOML value of the key as the toml package decodes it
	// (string, int64, bool, []any, map[string]any) and returns the setting
	// Desired takes, in canonical form. Its errors say what the value must
	// be ("must be 0..200"), without the key or the value: the
	// configuration adds those. A *ValueError says more.
	Decode func(raw any) (string, error)
	// LeaveAlone is the setting that means "do not manage the knob"
	// (cstate_max_latency_us's "-1"); "" for none. A profile may set it to
	// override a parent; a resolved profile leaves such a knob out.
	LeaveAlone string

	// New builds the knob of one scope (id: "node", or a GPU's
	// "gpu:<uuid>") for a run; everything it needs from the run (the
	// node's files, the job's user, the housekeeping CPUs, the topology)
	// it takes from r, resolved once per run.
	New func(r *Run, id ID) Knob

	// PartWise, when set, says the knob's value is made of parts that
	// come and go while jobs run (housekeeping_cpus: a service started
	// during a job is a new cgroup), written in this Form. Its Read names
	// every part (Form.FormatEach); plans and drift compare it summed up
	// (Form.Format), and the planner keeps its baseline and each change's
	// undo part by part, so that a restore never writes a part that
	// appeared since (lib/plan, partwise.go). Its Apply takes either form.
	PartWise *knobval.Form
	// GoWithout, when set, says one job's value of the knob excludes
	// another's (mps: a GPU's daemon serves one user): a job that wants
	// another value than the one other jobs hold goes without the knob
	// rather than share the value kept, and GoWithout words the warning
	// its user gets.
	GoWithout func(plan.Conflict) string
	// MIG, for a GPU knob, says it applies to each MIG device of a GPU
	// too, in the scope GPUScope(<MIG UUID>) (mps: a control daemon per
	// MIG device). Other GPU knobs set the physical GPU, whose settings
	// every MIG device shares, and have no MIG scope.
	MIG bool
}

// ValueError is a Decode error that names a key inside a table value, or
// shows the value its own way.
type ValueError struct {
	// Key is a key inside the value the problem is about; "" for the
	// value as a whole.
	Key string
	// Unknown says Key is not a key the value may hold.
	Unknown bool
	// Shown is how the message shows the value ("{mem = 1, sm = 0}"); ""
	// for the value as written.
	Shown string
	Msg   string
}

func (e *ValueError) Error() string {
	if e.Unknown {
		return fmt.Sprintf("unknown key %q", e.Key)
	}
	return e.Msg
}

// registry holds every Def, sorted by Order. It is written only by the
// knobs' init functions, so it is read without a lock.
var registry []*Def

// Register adds d to the registry: a knob's file calls it from its init
// function. It panics on a malformed or duplicate definition, a
// programming error every test run catches. unregister takes d out again
// (a test's throwaway knob); call it only where no other test runs.
func Register(d Def) (unregister func()) {
	switch {
	case d.Name == "" || d.Decode == nil || d.Doc == "" || d.Example == "" || d.New == nil:
		panic("knob: incomplete Def " + d.Name)
	case d.Kind == NodeKind && len(d.Writes) == 0:
		panic("knob: Def " + d.Name + ": a node knob lists the files it writes")
	}
	for _, o := range registry {
		if o.Name == d.Name || o.Order == d.Order {
			panic(fmt.Sprintf("knob: Def %s clashes with %s (name or order %d)", d.Name, o.Name, d.Order))
		}
	}
	i, _ := slices.BinarySearchFunc(registry, d.Order, func(o *Def, n int) int { return o.Order - n })
	registry = slices.Insert(registry, i, &d)
	return func() {
		registry = slices.DeleteFunc(registry, func(o *Def) bool { return o.Name == d.Name })
	}
}

// Defs returns every knob's definition, in order (node knobs and GPU knobs
// interleaved as their Order says; by convention node knobs come first).
func Defs() []Def {
	out := make([]Def, len(registry))
	for i, d := range registry {
		out[i] = *d
	}
	return out
}

// Lookup returns the definition of the knob with the given key name.
func Lookup(name string) (Def, bool) {
	for _, d := range registry {
		if d.Name == name {
			return *d, true
		}
	}
	return Def{}, false
}

// Names lists every knob's key name, in order.
func Names() []string { return namesOf(func(*Def) bool { return true }) }

// NodeKnobNames lists the node-wide knobs, in the order Catalog gives them.
func NodeKnobNames() []string { return namesOf(func(d *Def) bool { return d.Kind == NodeKind }) }

// GPUKnobNames lists the knobs of each GPU, in the order GPUKnobs gives
// them.
func GPUKnobNames() []string { return namesOf(func(d *Def) bool { return d.Kind == GPUKind }) }

// IsGPUKnob reports whether name is a per-GPU knob.
func IsGPUKnob(name string) bool {
	d, ok := Lookup(name)
	return ok && d.Kind == GPUKind
}

func namesOf(keep func(*Def) bool) []string {
	var out []string
	for _, d := range registry {
		if keep(d) {
			out = append(out, d.Name)
		}
	}
	return out
}

// nodeKnobs builds the node knobs over f for cpus (empty: the online CPUs),
// in order, with no job; the per-CPU knobs share one view of the CPUs.
func nodeKnobs(f files, cpus cpuset.Set) []Knob {
	return newRun(Env{CPUs: cpus}, f).nodeKnobs()
}

// nodeKnobs builds every node knob for r, in order.
func (r *Run) nodeKnobs() []Knob {
	var out []Knob
	for _, d := range registry {
		if d.Kind == NodeKind {
			out = append(out, d.New(r, ID{Name: d.Name, Scope: NodeScope}))
		}
	}
	return out
}

// migKnobs builds the knobs of each MIG device of dev that has a UUID
// (the Defs with MIG set), in order: scope GPUScope(<MIG UUID>).
func (r *Run) migKnobs(dev gpu.Device) []Knob {
	var out []Knob
	for _, m := range dev.MIG.Devices {
		if m.UUID == "" {
			continue
		}
		for _, d := range registry {
			if d.Kind == GPUKind && d.MIG {
				out = append(out, d.New(r, ID{Name: d.Name, Scope: GPUScope(m.UUID)}))
			}
		}
	}
	return out
}

// GPUKnobs returns the knobs of one GPU, in order, with no job: knobs
// that serve the job's user (mps) check only the GPU.
func GPUKnobs(b gpu.Backend, dev gpu.Device) []Knob {
	return newRun(Env{GPU: b, GPUs: []gpu.Device{dev}}, host.Root{}).gpuKnobs(dev)
}

// gpuKnobs builds the knobs of one GPU of r's, in order.
func (r *Run) gpuKnobs(dev gpu.Device) []Knob {
	var out []Knob
	for _, d := range registry {
		if d.Kind == GPUKind {
			out = append(out, d.New(r, ID{Name: d.Name, Scope: GPUScope(dev.UUID)}))
		}
	}
	return out
}
