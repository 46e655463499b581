package knob

import (
	"fmt"
	"slices"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/gpu"
	"gpuprep/lib/isolate"
)

// The registry is the one list of knobs. Each knob's file registers a Def
// (in an init function) saying its configuration key, its scope, how a
// TOML value of that key is checked and turned into the setting Desired
// takes, and how to build the knob. The configuration (lib/config), the
// catalog, and the tests all derive their lists of knobs from it, so
// adding a knob is one file here (plus its test) and its documentation in
// examples/gpuprep.toml.

// Scope says whether a knob is node-wide or one per GPU.
type Scope int

// Scopes.
const (
	ScopeNode Scope = iota // node-wide: one knob (CPU, memory, kernel)
	ScopeGPU               // one knob per GPU of the job
)

func (s Scope) String() string {
	if s == ScopeGPU {
		return "gpu"
	}
	return "node"
}

// Def defines one knob.
type Def struct {
	// Name is the knob's key in the configuration and its ID's Name.
	Name  string
	Scope Scope
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

	node func(f files, cpus *cpuScope) Knob // for ScopeNode
	gpu  func(base gpuKnob) Knob            // for ScopeGPU
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

// register adds d to the registry. It panics on a malformed or duplicate
// definition: a programming error every test run catches.
func register(d Def) {
	switch {
	case d.Name == "" || d.Decode == nil || d.Doc == "" || d.Example == "":
		panic("knob: incomplete Def " + d.Name)
	case d.Scope == ScopeNode && (d.node == nil || d.gpu != nil || len(d.Writes) == 0),
		d.Scope == ScopeGPU && (d.gpu == nil || d.node != nil):
		panic("knob: Def " + d.Name + ": constructor does not match its scope")
	}
	for _, o := range registry {
		if o.Name == d.Name || o.Order == d.Order {
			panic(fmt.Sprintf("knob: Def %s clashes with %s (name or order %d)", d.Name, o.Name, d.Order))
		}
	}
	i, _ := slices.BinarySearchFunc(registry, d.Order, func(o *Def, n int) int { return o.Order - n })
	registry = slices.Insert(registry, i, &d)
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
func NodeKnobNames() []string { return namesOf(func(d *Def) bool { return d.Scope == ScopeNode }) }

// GPUKnobNames lists the knobs of each GPU, in the order GPUKnobs gives
// them.
func GPUKnobNames() []string { return namesOf(func(d *Def) bool { return d.Scope == ScopeGPU }) }

// IsGPUKnob reports whether name is a per-GPU knob.
func IsGPUKnob(name string) bool {
	d, ok := Lookup(name)
	return ok && d.Scope == ScopeGPU
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
// in order; the per-CPU knobs share one view of the CPUs.
func nodeKnobs(f files, cpus cpuset.Set) []Knob {
	return nodeKnobsWith(f, cpus, isolate.Options{})
}

// nodeKnobsWith is nodeKnobs with the node's [isolation] options.
func nodeKnobsWith(f files, cpus cpuset.Set, iso isolate.Options) []Knob {
	sc := newCPUScope(f, cpus)
	sc.isolation = iso
	var out []Knob
	for _, d := range registry {
		if d.Scope == ScopeNode {
			out = append(out, d.node(f, sc))
		}
	}
	return out
}

// GPUKnobs returns the knobs of one GPU, in order, with no job: knobs
// that serve the job's user (mps) check only the GPU.
func GPUKnobs(b gpu.Backend, dev gpu.Device) []Knob { return gpuKnobsFor(b, dev, nil) }

// gpuKnobsFor is GPUKnobs for the node and job of env (nil: none).
func gpuKnobsFor(b gpu.Backend, dev gpu.Device, env *Env) []Knob {
	ctl := controlOf(b)
	var out []Knob
	for _, d := range registry {
		if d.Scope == ScopeGPU {
			out = append(out, d.gpu(gpuKnob{id: ID{Name: d.Name, Scope: GPUScope(dev.UUID)}, b: ctl, index: dev.Index, env: env}))
		}
	}
	return out
}
