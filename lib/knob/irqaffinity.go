package knob

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/host"
	"gpuprep/lib/irq"
	"gpuprep/lib/knobval"
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
	// run gives the profile's housekeeping CPUs, resolved once per run.
	run  *Run
	root host.Root
	// signal sends irqbalance SIGHUP (a rescan); nil: only on the host.
	signal func(pid int) error
	// runDir holds the list (isolate.Options.RunDir); nil: opened for
	// each use.
	runDir *rundir.Dir
	// planned is what Desired computed in this run.
	planned planned
	// last is the list as last read (loadList).
	last lastList
}

func init() {
	Register(Def{
		Name: "irq_affinity", Kind: NodeKind, Order: 210, Example: `true`,
		Doc: "device interrupts on their own NUMA node's CPUs (GPUs, HCAs; /proc/irq/<n>/smp_affinity_list), and, " +
			"with housekeeping_cpus set, every other movable interrupt off the jobs' CPUs onto the housekeeping CPUs; true or false",
		Decode:     decodeOnOff,
		LeaveAlone: string(onOff(false)),
		Writes: []string{
			"proc/irq/<N>/smp_affinity_list",
			"run/gpuprep/irq-placed",
		},
		New: func(r *Run, _ ID) Knob { return newIRQAffinity(r) },
	})
}

func newIRQAffinity(r *Run) *irqAffinityKnob {
	return &irqAffinityKnob{id: ID{Name: "irq_affinity", Scope: NodeScope}, f: r.f, log: r.Log(), run: r, root: r.Root(),
		runDir: r.env.Isolation.RunDir}
}

func (k *irqAffinityKnob) ID() ID { return k.id }

// check says whether the node has IRQs gpuprep can see: /proc/interrupts
// exists (a stat: the file is megabytes on a large node, and only
// Desired needs its rows).
func (k *irqAffinityKnob) check() error {
	if k.root.Dir() == "" {
		return fmt.Errorf("%s: no root directory: %w", k.id, ErrUnsupported)
	}
	switch ok, err := k.root.ExistsErr(irq.InterruptsPath); {
	case err != nil:
		return fmt.Errorf("%s: %w", k.id, err)
	case !ok:
		return unsupported(k.id, irq.InterruptsPath)
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
	var toRead []int
	for _, p := range placed {
		if p.Refused {
			now[p.IRQ] = p.To
		} else {
			toRead = append(toRead, p.IRQ)
		}
	}
	affs, err := k.readCPUs(toRead, false)
	if err != nil {
		return "", fmt.Errorf("%s: %w", k.id, err)
	}
	for _, a := range affs {
		now[a.IRQ] = a.CPUs
	}
	moved := false // or gone
	for _, p := range placed {
		if !now[p.IRQ].Equal(p.To) {
			moved = true
			break
		}
	}
	if !moved {
		return k.listValue(), nil // every IRQ where gpuprep put it
	}
	return formatIRQValue(now), nil
}

// readCPUs reads the smp_affinity_list of each IRQ given through /proc/irq
// opened once, several at a time; an IRQ that is gone is left out. With
// mode, each file's permissions too (irq.Affinity.ReadOnly).
func (k *irqAffinityKnob) readCPUs(irqs []int, mode bool) ([]irq.Affinity, error) {
	if len(irqs) == 0 {
		return nil, nil
	}
	proc, err := irq.OpenProcIRQ(k.root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // every IRQ gone
	}
	if err != nil {
		return nil, err
	}
	defer proc.Close()
	read := proc.ReadCPUs
	if mode {
		read = proc.ReadAffinities
	}
	affs, _, err := read(irqs)
	return affs, err
}

// Desired computes the placement (irq.Place) from the node as it is
// without gpuprep's placement: /proc/interrupts, each IRQ's affinity (a
// placed IRQ's as it was before), the GPUs and HCAs on the bus, and the
// housekeeping CPUs the job's profile's housekeeping_cpus resolves to
// here (Run.Housekeeping; none: device IRQs on their node only).
//
// A placement in force (PlacedPath, held by the jobs running) that was
// computed for the same online and housekeeping CPUs is the one Desired
// would compute again: its list gives the value, and nothing else is read.
func (k *irqAffinityKnob) Desired(setting string) (Value, error) {
	if setting != string(onOff(true)) {
		return "", fmt.Errorf("%s: %w", k.id, ErrLeaveAlone)
	}
	if err := k.check(); err != nil {
		return "", err
	}
	hk, _, err := k.run.Housekeeping()
	if err != nil {
		return "", fmt.Errorf("%s: %s: %w", k.id, housekeepingName, err)
	}
	online, err := topo.OnlineCPUs(k.f)
	if err != nil {
		return "", fmt.Errorf("%s: %w", k.id, err)
	}
	basis := irq.Basis{Online: online, Housekeeping: hk.Intersection(online)}
	list, err := k.loadList()
	if err != nil {
		return "", err
	}
	if len(list.placed) > 0 && list.hasBasis && list.basis.Equal(basis) {
		return k.listValue(), nil
	}
	in, err := k.input(basis, list.placed)
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
	v := formatIRQValue(want)
	k.planned = planned{value: v, basis: basis, read: cpusOf(in.IRQs, list.placed)}
	return v, nil
}

// planned is what Desired computed in this run: the value, the basis it
// was computed for (kept in the list when that value is applied) and the
// CPUs each IRQ no placement held was read at (Apply's "before").
type planned struct {
	value Value
	basis irq.Basis
	read  map[int]cpuset.Set
}

// placementValue is the Value of a list: each IRQ with the CPUs it was
// set to, as formatIRQValue writes it (the IRQs grouped by their CPUs,
// the groups ordered by their lowest IRQ), without a part and a number
// formatted for each IRQ: a large node's list holds over a thousand, and
// every run that finds a placement held formats it.
func placementValue(placed []irq.Placed) Value {
	type group struct {
		cpus string
		irqs []int
	}
	var groups []*group
	byCPUs := map[string]*group{}
	var buf []byte
	for _, p := range placed {
		buf = p.To.AppendTo(buf[:0])
		g, ok := byCPUs[string(buf)]
		if !ok {
			g = &group{cpus: string(buf)}
			byCPUs[g.cpus] = g
			groups = append(groups, g)
		}
		g.irqs = append(g.irqs, p.IRQ)
	}
	for _, g := range groups {
		slices.Sort(g.irqs)
	}
	slices.SortFunc(groups, func(a, b *group) int { return a.irqs[0] - b.irqs[0] })
	var out []byte
	for i, g := range groups {
		if i > 0 {
			out = append(out, ';')
		}
		out = cpuset.New(g.irqs...).AppendTo(out)
		out = append(append(out, '='), g.cpus...)
	}
	return Value(out)
}

// cpusOf is the CPUs each IRQ read holds, by IRQ, leaving out those the
// list names (what they hold is gpuprep's).
func cpusOf(affs []irq.Affinity, placed []irq.Placed) map[int]cpuset.Set {
	m := make(map[int]cpuset.Set, len(affs))
	for _, a := range affs {
		m[a.IRQ] = a.CPUs
	}
	for _, p := range placed {
		delete(m, p.IRQ)
	}
	return m
}

// input reads what irq.Place needs for basis, placed being the IRQs
// placed now (their affinity before gpuprep stands for what they hold).
// Jobs may run on every online CPU outside the housekeeping CPUs: those
// are the CPUs other IRQs leave.
func (k *irqAffinityKnob) input(basis irq.Basis, placed []irq.Placed) (irq.Input, error) {
	online, hk := basis.Online, basis.Housekeeping
	nums, err := irq.ReadIRQNumbers(k.root)
	if err != nil {
		return irq.Input{}, err
	}
	affs, err := k.readCPUs(nums, true)
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
	in := irq.Input{Housekeeping: hk, IRQs: affs}
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

// irqForm is irq_affinity's Value as a knobval.Form: numbered keys (IRQs)
// grouped by the CPUs each holds, "60-61,64=0-1;160=2-3", groups ordered
// by their lowest IRQ, "" for none; never summed up.
var irqForm = knobval.Form{What: "irq_affinity value", Numbered: true, Check: checkIRQCPUs}

// checkIRQCPUs checks an IRQ's CPUs: a CPU list naming at least one.
func checkIRQCPUs(_, cpus string) (string, error) {
	cs, err := cpuset.Parse(cpus)
	if err != nil || cs.IsEmpty() {
		return "", fmt.Errorf("%q is not a placement such as \"60-61=0-1;160=2-3\"", clip(cpus))
	}
	return cs.String(), nil
}

// formatIRQValue is the Value of a placement, each IRQ with its CPUs.
func formatIRQValue(m map[int]cpuset.Set) Value {
	p := make(knobval.Parts, len(m))
	for n, cpus := range m {
		p[strconv.Itoa(n)] = cpus.String()
	}
	return irqForm.Format(p)
}

// parseIRQValue reads formatIRQValue's text back.
func parseIRQValue(v Value) (map[int]cpuset.Set, error) {
	_, each, err := irqForm.Parse(v)
	if err != nil {
		return nil, err
	}
	out := make(map[int]cpuset.Set, len(each))
	sets := map[string]cpuset.Set{} // a placement holds a few CPU lists
	for k, cpus := range each {
		n, _ := strconv.Atoi(k)
		set, ok := sets[cpus]
		if !ok {
			set, _ = cpuset.Parse(cpus)
			sets[cpus] = set
		}
		out[n] = set
	}
	return out, nil
}
