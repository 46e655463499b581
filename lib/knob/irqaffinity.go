package knob

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"strings"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/host"
	"gpuprep/lib/irq"
	"gpuprep/lib/isolate"
	"gpuprep/lib/rundir"
	"gpuprep/lib/topo"
)

// irqAffinityKnob is irq_affinity: device interrupts served on their own
// NUMA node, and, with housekeeping_cpus set in the same profile, every
// other interrupt that can move off the CPUs jobs run on (lib/irq's
// placement rule). It writes /proc/irq/<n>/smp_affinity_list and keeps
// what it placed, with what each IRQ held before, in /run/gpuprep/irq-placed
// (irq.PlacedPath), which is also the list irqbalance's policy script
// bans.
//
// Its Value is the placement gpuprep keeps: the IRQs it placed, grouped
// by the CPUs each holds now ("60-61,64=0-1;160=2-3"), "" when it placed
// none (the node's own placement). The placement is the node's, never
// one job's: every GPU's and HCA's IRQs, and every other IRQ off the
// CPUs outside housekeeping_cpus, so jobs sharing the node hold one
// Value and the usual reference count decides when it is undone.
//
// Apply("") undoes it: where irqbalance runs (with gpuprep's policy
// script) the IRQs are handed back to it, unlisted, and it places them
// at its next rescan; where it does not, each IRQ gets back what it held
// before. A managed IRQ (the kernel refuses a new affinity) is skipped
// and counted: kept in the file as refused, read as placed, never drift.
type irqAffinityKnob struct {
	id  ID
	f   files
	log *slog.Logger
	// housekeeping resolves a housekeeping_cpus setting on this node.
	housekeeping *housekeepingKnob
	root         host.Root
	// signal sends irqbalance SIGHUP (a rescan); nil: only on the host.
	signal func(pid int) error
	// runDir holds the list (isolate.Options.RunDir); nil: opened for
	// each use.
	runDir *rundir.Dir
}

func init() {
	register(Def{
		Name: "irq_affinity", Scope: ScopeNode, Order: 210, Example: `true`,
		Doc: "device interrupts on their own NUMA node's CPUs (GPUs, HCAs; /proc/irq/<n>/smp_affinity_list), and, " +
			"with housekeeping_cpus set, every other movable interrupt off the jobs' CPUs onto the housekeeping CPUs; true or false",
		Decode:     decodeOnOff,
		LeaveAlone: string(onOff(false)),
		Writes: []string{
			"proc/irq/<N>/smp_affinity_list",
			"run/gpuprep/irq-placed",
		},
		node: func(f files, sc *cpuScope) Knob { return newIRQAffinity(f, sc.isolation) },
	})
}

func newIRQAffinity(f files, opt isolate.Options) *irqAffinityKnob {
	k := &irqAffinityKnob{id: ID{Name: "irq_affinity", Scope: NodeScope}, f: f, log: opt.Log,
		housekeeping: newHousekeeping(f, opt), runDir: opt.RunDir}
	if d, ok := f.(interface{ Dir() string }); ok {
		k.root = host.NewRoot(d.Dir())
	}
	if k.log == nil {
		k.log = slog.New(slog.DiscardHandler)
	}
	return k
}

func (k *irqAffinityKnob) ID() ID { return k.id }

// check says whether the node has IRQs gpuprep can see: /proc/interrupts.
func (k *irqAffinityKnob) check() error {
	if k.root.Dir() == "" {
		return fmt.Errorf("%s: no root directory: %w", k.id, ErrUnsupported)
	}
	if _, err := k.root.ReadString(irq.InterruptsPath); notExist(err) {
		return unsupported(k.id, irq.InterruptsPath)
	} else if err != nil {
		return fmt.Errorf("%s: %w", k.id, err)
	}
	return nil
}

// Read reads the IRQs gpuprep placed (PlacedPath) and the CPUs each holds
// now; an IRQ that is gone is left out, a refused one reads as placed.
func (k *irqAffinityKnob) Read() (Value, error) {
	if err := k.check(); err != nil {
		return "", err
	}
	placed, err := k.loadPlaced()
	if err != nil {
		return "", err
	}
	now := map[int]cpuset.Set{}
	for _, p := range placed {
		if p.Refused {
			now[p.IRQ] = p.To
			continue
		}
		a, err := irq.ReadAffinity(k.root, p.IRQ)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", k.id, err)
		}
		now[p.IRQ] = a.CPUs
	}
	return formatIRQValue(now), nil
}

// Desired is the placement without housekeeping CPUs: device IRQs on their
// node. DesiredIn adds the profile's housekeeping_cpus.
func (k *irqAffinityKnob) Desired(setting string) (Value, error) {
	return k.DesiredIn(setting, func(string) (string, bool) { return "", false })
}

// DesiredIn computes the placement (irq.Place) from the node as it is
// without gpuprep's placement: /proc/interrupts, each IRQ's affinity (a
// placed IRQ's as it was before), the GPUs and HCAs on the bus, and the
// housekeeping CPUs the profile's housekeeping_cpus resolves to here.
func (k *irqAffinityKnob) DesiredIn(setting string, profile func(name string) (string, bool)) (Value, error) {
	if setting != string(onOff(true)) {
		return "", fmt.Errorf("%s: %w", k.id, ErrLeaveAlone)
	}
	if err := k.check(); err != nil {
		return "", err
	}
	var hk cpuset.Set
	if spec, ok := profile(k.housekeeping.id.Name); ok {
		v, err := k.housekeeping.Desired(spec)
		if err != nil {
			return "", fmt.Errorf("%s: %w", k.id, err)
		}
		if hk, err = cpuset.Parse(string(v)); err != nil {
			return "", fmt.Errorf("%s: housekeeping CPUs %q: %w", k.id, v, err)
		}
	}
	in, err := k.input(hk)
	if err != nil {
		return "", fmt.Errorf("%s: %w", k.id, err)
	}
	p := irq.Place(in)
	want := map[int]cpuset.Set{}
	for _, pl := range p.Placements {
		want[pl.IRQ] = pl.To
	}
	if len(p.Skipped) > 0 {
		k.log.Info("irq_affinity: IRQs left where they are", "count", len(p.Skipped), "first", p.Skipped[0].Reason)
	}
	return formatIRQValue(want), nil
}

// input reads what irq.Place needs. Jobs may run on every online CPU
// outside the housekeeping CPUs: those are the CPUs other IRQs leave.
func (k *irqAffinityKnob) input(hk cpuset.Set) (irq.Input, error) {
	online, err := topo.OnlineCPUs(k.f)
	if err != nil {
		return irq.Input{}, err
	}
	ints, err := irq.ReadInterrupts(k.root)
	if err != nil {
		return irq.Input{}, err
	}
	nums := make([]int, 0, len(ints.IRQs))
	for _, i := range ints.IRQs {
		nums = append(nums, i.IRQ)
	}
	affs, _, err := irq.ReadAffinities(k.root, nums)
	if err != nil {
		return irq.Input{}, err
	}
	placed, err := k.loadPlaced()
	if err != nil {
		return irq.Input{}, err
	}
	before := map[int]cpuset.Set{}
	for _, p := range placed {
		before[p.IRQ] = p.From
	}
	kept := affs[:0]
	for _, a := range affs {
		if a.IRQ > cpuset.MaxCPU {
			continue // beyond what a Value can name; no Linux node numbers IRQs so high
		}
		if from, ok := before[a.IRQ]; ok {
			a.CPUs = from
		}
		kept = append(kept, a)
	}
	affs = kept
	ids, err := irq.PlacedDevices(k.root)
	if err != nil {
		return irq.Input{}, err
	}
	in := irq.Input{Housekeeping: hk.Intersection(online), IRQs: affs}
	if !hk.IsEmpty() {
		in.JobCPUs = online.Difference(hk)
	}
	var unset []string // devices without MSI vectors now
	for _, id := range ids {
		d, err := irq.ReadDevice(k.root, id)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile
		}
		if err != nil {
			return irq.Input{}, err
		}
		if len(d.MSI) == 0 {
			unset = append(unset, id)
		}
		in.Devices = append(in.Devices, irq.DeviceIRQs{BusID: id, IRQs: d.IRQs(), NUMANode: d.NUMANode,
			NodeCPUs: d.LocalCPUs.Intersection(online)})
	}
	if len(unset) > 0 {
		// The NVIDIA driver sets a GPU's interrupts up when it
		// initialises the GPU: with persistence mode off, when a process
		// opens it, which may be after the prolog. Those are not placed.
		k.log.Warn("irq_affinity: devices without MSI interrupts now, not placed (a GPU's come when the driver initialises it: set gpu_persistence = true)",
			"devices", strings.Join(unset, ","))
	}
	return in, nil
}

// formatIRQValue groups IRQs by CPU set: "60-61,64=0-1;160=2-3", groups
// ordered by their lowest IRQ; "" for none.
func formatIRQValue(m map[int]cpuset.Set) Value {
	groups := map[string][]int{}
	for n, cpus := range m {
		s := cpus.String()
		groups[s] = append(groups[s], n)
	}
	type group struct {
		irqs cpuset.Set
		cpus string
	}
	var gs []group
	for cpus, irqs := range groups {
		gs = append(gs, group{cpuset.New(irqs...), cpus})
	}
	slices.SortFunc(gs, func(a, b group) int { return a.irqs.Min() - b.irqs.Min() })
	parts := make([]string, len(gs))
	for i, g := range gs {
		parts[i] = g.irqs.String() + "=" + g.cpus
	}
	return Value(strings.Join(parts, ";"))
}

// parseIRQValue reads formatIRQValue's text back.
func parseIRQValue(v Value) (map[int]cpuset.Set, error) {
	out := map[int]cpuset.Set{}
	if v == "" {
		return out, nil
	}
	for _, part := range strings.Split(string(v), ";") {
		irqs, cpus, ok := strings.Cut(part, "=")
		is, err1 := cpuset.Parse(irqs)
		cs, err2 := cpuset.Parse(cpus)
		if !ok || err1 != nil || err2 != nil || is.IsEmpty() || cs.IsEmpty() {
			return nil, fmt.Errorf("%q is not a placement such as \"60-61=0-1;160=2-3\"", clip(part))
		}
		for _, n := range is.List() {
			if _, dup := out[n]; dup {
				return nil, fmt.Errorf("IRQ %d placed twice in %q", n, clip(string(v)))
			}
			out[n] = cs
		}
	}
	return out, nil
}

var _ ProfileDependent = (*irqAffinityKnob)(nil)
