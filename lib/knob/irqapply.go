package knob

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/dirfd"
	"gpuprep/lib/host"
	"gpuprep/lib/irq"
	"gpuprep/lib/rundir"
)

// maxPlacedFile bounds /run/gpuprep/irq-placed: a line per IRQ.
const maxPlacedFile = 4 << 20

// ErrIrqbalanceUnaware is Apply's error where irqbalance runs without
// gpuprep's policy script: it would move the placed IRQs back within
// seconds, so nothing is placed.
var ErrIrqbalanceUnaware = errors.New("irqbalance runs without gpuprep's policy script")

// Apply places the IRQs v names (and undoes the placement of those it
// does not name), in this order, so that a crash at any point leaves a
// file that says what to undo: check that irqbalance, where it runs,
// bans what gpuprep lists; write the list (the IRQs to place, with what
// each holds before); SIGHUP irqbalance so it rescans; write each IRQ's
// smp_affinity_list and read it and effective_affinity_list back; write
// the list again with the IRQs the kernel refused marked. An IRQ v no
// longer names gets back what it held before, or, where irqbalance runs,
// is only unlisted: irqbalance places it again at its rescan.
func (k *irqAffinityKnob) Apply(v Value) error {
	if err := k.check(); err != nil {
		return err
	}
	want, err := parseIRQValue(v)
	if err != nil {
		return fmt.Errorf("%s: %w", k.id, err)
	}
	old, err := k.loadPlaced()
	if err != nil {
		return err
	}
	balancers, err := irq.FindIrqbalance(k.root)
	if err != nil {
		return fmt.Errorf("%s: looking for irqbalance: %w", k.id, err)
	}
	if len(want) > 0 {
		if err := k.requirePolicyScript(balancers); err != nil {
			return err
		}
	}
	if len(old) == 0 && len(want) == 0 {
		return k.savePlaced(nil)
	}
	proc, err := irq.OpenProcIRQ(k.root)
	if err != nil {
		return fmt.Errorf("%s: %w", k.id, err)
	}
	defer proc.Close()
	set := k.setter(proc)
	next, err := k.nextPlaced(proc, old, want)
	if err != nil {
		return err
	}
	undo := unlisted(old, want)
	basis := k.basisOf(v)
	// Undone IRQs stay listed until they are written back, so a crash
	// meanwhile still knows them. A list that places nothing new (a
	// restore) names them already, as they were: it stays as it is.
	var before string
	if len(next) > 0 {
		before = irq.FormatPlacedFor(append(slices.Clone(next), undo...), basis)
		if err := k.writeList(before); err != nil {
			return err
		}
		k.rescan(balancers)
	}
	problems, err := k.setAffinities(set, next)
	if err != nil {
		return err
	}
	if err := k.restore(set, undo, len(balancers) > 0); err != nil {
		return err
	}
	// The list as it stands now: without the undone IRQs, and with those
	// the kernel refused marked; unchanged, it is not written again.
	if len(next) == 0 {
		if err := k.savePlaced(nil); err != nil {
			return err
		}
	} else if after := irq.FormatPlacedFor(next, basis); after != before {
		if err := k.writeList(after); err != nil {
			return err
		}
	}
	if len(undo) > 0 {
		k.rescan(balancers) // hand the unlisted IRQs back
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s: %s", k.id, strings.Join(problems, "; "))
	}
	return nil
}

// requirePolicyScript fails with ErrIrqbalanceUnaware where an irqbalance
// runs without gpuprep's policy script, saying how to add it.
func (k *irqAffinityKnob) requirePolicyScript(balancers []irq.Irqbalance) error {
	for _, b := range balancers {
		if !k.bansPlaced(b) {
			return fmt.Errorf("%s: %w (pid %d, %s): it would move the IRQs gpuprep places; add --policyscript=%s to its arguments "+
				"(IRQBALANCE_ARGS in /etc/default/irqbalance, or /etc/sysconfig/irqbalance) and restart it",
				k.id, ErrIrqbalanceUnaware, b.PID, policyShown(b), k.installedScript())
		}
	}
	return nil
}

// basisOf is the basis of v where this run's Desired computed it (a
// roll-forward in a later run, or a restore, keeps none: the next job
// computes its placement again).
func (k *irqAffinityKnob) basisOf(v Value) *irq.Basis {
	if v == "" || v != k.planned.value {
		return nil
	}
	b := k.planned.basis
	return &b
}

// setter writes IRQs through proc; a test's files (playing a kernel that
// refuses) where the knob has them.
func (k *irqAffinityKnob) setter(proc *irq.ProcIRQ) irq.Setter {
	s := irq.Setter{Root: k.root, Proc: proc}
	if _, plain := k.f.(host.Root); !plain {
		s.Files = k.f
	}
	return s
}

// nextPlaced is the list to write, ascending by IRQ: each IRQ of want with
// what it holds now, unless gpuprep placed it already (then what it held
// before that).
func (k *irqAffinityKnob) nextPlaced(proc *irq.ProcIRQ, old []irq.Placed, want map[int]cpuset.Set) ([]irq.Placed, error) {
	byIRQ := map[int]irq.Placed{}
	for _, p := range old {
		byIRQ[p.IRQ] = p
	}
	var unknown []int
	for _, n := range sortedIRQs(want) {
		if _, ok := byIRQ[n]; ok {
			continue
		}
		if cpus, ok := k.planned.read[n]; ok {
			byIRQ[n] = irq.Placed{IRQ: n, From: cpus} // read by this run's Desired
			continue
		}
		unknown = append(unknown, n)
	}
	affs, gone, err := proc.ReadCPUs(unknown)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k.id, err)
	}
	if len(gone) > 0 {
		return nil, fmt.Errorf("%s: %w", k.id, &fs.PathError{Op: "open", Path: k.root.Path(irq.AffinityPath(gone[0])), Err: fs.ErrNotExist})
	}
	for _, a := range affs {
		byIRQ[a.IRQ] = irq.Placed{IRQ: a.IRQ, From: a.CPUs}
	}
	next := make([]irq.Placed, 0, len(want))
	for _, n := range sortedIRQs(want) {
		p := byIRQ[n]
		p.To = want[n]
		next = append(next, p)
	}
	return next, nil
}

// unlisted are the IRQs of old that want no longer names: to undo.
func unlisted(old []irq.Placed, want map[int]cpuset.Set) []irq.Placed {
	var undo []irq.Placed
	for _, p := range old {
		if _, ok := want[p.IRQ]; !ok {
			undo = append(undo, p)
		}
	}
	return undo
}

// setAffinities writes each IRQ's smp_affinity_list and reads it back,
// marking in next those the kernel refused. It returns the mismatches
// found, and an error only where an IRQ cannot be written.
func (k *irqAffinityKnob) setAffinities(set irq.Setter, next []irq.Placed) ([]string, error) {
	irqs, to := make([]int, len(next)), make([]cpuset.Set, len(next))
	for i, p := range next {
		irqs[i], to[i] = p.IRQ, p.To
	}
	results, errs := set.SetEach(irqs, to)
	var problems []string
	refusedN := 0
	for i, res := range results {
		if errs[i] != nil {
			return nil, fmt.Errorf("%s: %w", k.id, errs[i])
		}
		next[i].Refused = res.Refused
		switch {
		case res.Refused:
			refusedN++
		case !res.Got.Equal(to[i]):
			problems = append(problems, res.Mismatch)
		case res.Mismatch != "":
			// smp_affinity_list holds; the kernel moves the IRQ at its
			// next interrupt on some chips.
			k.log.Warn("irq_affinity: effective affinity not yet moved", "irq", irqs[i], "why", res.Mismatch)
		}
	}
	if refusedN > 0 {
		k.log.Info("irq_affinity: IRQs the kernel manages left alone (isolcpus=managed_irq at boot keeps them off job CPUs)", "count", refusedN)
	}
	return problems, nil
}

// restore gives each IRQ back what it held before gpuprep placed it;
// where irqbalance runs it does nothing: unlisted, irqbalance places
// them. An IRQ that is gone, or that the kernel refused, is skipped.
func (k *irqAffinityKnob) restore(set irq.Setter, ps []irq.Placed, balanced bool) error {
	if balanced {
		if len(ps) > 0 {
			k.log.Info("irq_affinity: IRQs handed back to irqbalance", "count", len(ps))
		}
		return nil
	}
	var irqs []int
	var from []cpuset.Set
	for _, p := range ps {
		if !p.Refused {
			irqs, from = append(irqs, p.IRQ), append(from, p.From)
		}
	}
	set.NoEffective = true // a restore checks what smp_affinity_list reads back
	results, errs := set.SetEach(irqs, from)
	for i, res := range results {
		switch err := errs[i]; {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return fmt.Errorf("%s: restoring: %w", k.id, err)
		case !res.Refused && !res.Got.Equal(from[i]):
			return fmt.Errorf("%s: restoring: %s", k.id, res.Mismatch)
		}
	}
	return nil
}

// bansPlaced says whether irqbalance's --policyscript is gpuprep's: a file
// holding the script (PolicyScriptPath where the packages install it;
// make install's PREFIX may put it elsewhere), or a folder of scripts
// holding its folder form (irqbalance then runs each in turn).
func (k *irqAffinityKnob) bansPlaced(b irq.Irqbalance) bool {
	if b.PolicyScript == "" {
		return false
	}
	is := func(p string, inDir bool) bool {
		s, err := k.root.ReadString(p)
		return err == nil && s == strings.TrimSpace(irq.PolicyScript(irq.PlacedPath, irq.ProcIRQDir, inDir))
	}
	if is(b.PolicyScript, false) {
		return true
	}
	names, err := k.root.ReadDir(b.PolicyScript)
	if err != nil {
		return false
	}
	for _, n := range names {
		if is(path.Join(b.PolicyScript, n), true) {
			return true
		}
	}
	return false
}

// installedScript is where the policy script is installed on this node:
// the packages' PolicyScriptPath, else make install's default PREFIX's;
// PolicyScriptPath when neither holds it.
func (k *irqAffinityKnob) installedScript() string {
	for _, p := range []string{irq.PolicyScriptPath, "/usr/local/lib/gpuprep/irqbalance-policy"} {
		if k.root.Exists(p) {
			return p
		}
	}
	return irq.PolicyScriptPath
}

func policyShown(b irq.Irqbalance) string {
	if b.PolicyScript == "" {
		return "no --policyscript"
	}
	return "--policyscript=" + b.PolicyScript
}

// rescan sends each irqbalance SIGHUP: it asks the policy script again
// at its next pass (every 10 s). Only on the node itself.
func (k *irqAffinityKnob) rescan(bs []irq.Irqbalance) {
	signal := k.signal
	if signal == nil {
		if !k.root.IsHost() {
			return
		}
		signal = func(pid int) error { return unix.Kill(pid, unix.SIGHUP) }
	}
	for _, b := range bs {
		if err := signal(b.PID); err != nil && !errors.Is(err, unix.ESRCH) {
			k.log.Warn("irq_affinity: cannot ask irqbalance to rescan", "pid", b.PID, "err", err)
		}
	}
}

// loadList reads PlacedPath through the run directory (lib/rundir:
// Env.RunDir, else opened read-only for this read); none is an empty list.
// It refuses, never follows, a symbolic link in its place (O_NOFOLLOW),
// and refuses what is not a regular file (a FIFO would block), is larger
// than a list can be, belongs to another user than this process's, or
// others may write, or lies in a run directory that is so.
func (k *irqAffinityKnob) loadList() (placedList, error) {
	var b []byte
	err := rundir.Use(k.runDir, k.root, false, func(rd *rundir.Dir) (err error) {
		b, err = rd.ReadTrusted(irq.PlacedName, maxPlacedFile)
		return err
	})
	if err != nil || string(b) != k.last.raw {
		k.last = lastList{} // listValue is always the list loaded last
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return placedList{}, nil
	case errors.Is(err, dirfd.ErrSymlink):
		return placedList{}, fmt.Errorf("%s: %s is a symbolic link: not trusted", k.id, irq.PlacedPath)
	case errors.Is(err, dirfd.ErrNotRegular):
		return placedList{}, fmt.Errorf("%s: %s is not a regular file: not trusted", k.id, irq.PlacedPath)
	case errors.Is(err, dirfd.ErrTooLarge):
		return placedList{}, fmt.Errorf("%s: %s is larger than %d bytes", k.id, irq.PlacedPath, maxPlacedFile)
	case err != nil:
		return placedList{}, fmt.Errorf("%s: %w: not trusted", k.id, err)
	}
	if k.last.raw != "" {
		l := k.last.list
		l.placed = slices.Clone(l.placed)
		return l, nil
	}
	ps, err := irq.ParsePlaced(irq.PlacedPath, b)
	if err != nil {
		return placedList{}, fmt.Errorf("%s: %w", k.id, err)
	}
	l := placedList{placed: ps}
	l.basis, l.hasBasis = irq.ParseBasis(b)
	k.last = lastList{raw: string(b), list: l}
	l.placed = slices.Clone(ps)
	return l, nil
}

// lastList is the list as this knob last read it: its text, what it
// parses to, and its value once formatted, so that a run reading an
// unchanged list twice (Read, then Desired) parses and formats it once.
type lastList struct {
	raw   string
	list  placedList
	value Value
}

// listValue is placementValue of the list last read.
func (k *irqAffinityKnob) listValue() Value {
	if k.last.value == "" {
		k.last.value = placementValue(k.last.list.placed)
	}
	return k.last.value
}

// placedList is PlacedPath read: the IRQs placed, and the basis the
// placement was computed for where the list keeps it.
type placedList struct {
	placed   []irq.Placed
	basis    irq.Basis
	hasBasis bool
}

// loadPlaced is loadList's IRQs.
func (k *irqAffinityKnob) loadPlaced() ([]irq.Placed, error) {
	l, err := k.loadList()
	return l.placed, err
}

// savePlaced replaces PlacedPath atomically through the run directory
// (mode 0644: irqbalance's sandboxed policy script reads it as another
// user), or removes it when ps is empty.
func (k *irqAffinityKnob) savePlaced(ps []irq.Placed) error {
	if len(ps) == 0 {
		err := rundir.Use(k.runDir, k.root, true, func(rd *rundir.Dir) error { return rd.Remove(irq.PlacedName) })
		if err != nil {
			return fmt.Errorf("%s: %w", k.id, err)
		}
		return nil
	}
	return k.writeList(irq.FormatPlaced(ps))
}

// writeList replaces PlacedPath with text, as savePlaced does.
func (k *irqAffinityKnob) writeList(text string) error {
	err := rundir.Use(k.runDir, k.root, true, func(rd *rundir.Dir) error {
		return rd.WriteAtomic(irq.PlacedName, []byte(text), 0o644)
	})
	if err != nil {
		return fmt.Errorf("%s: %w", k.id, err)
	}
	return nil
}

// sortedIRQs are the IRQs of a placement, ascending.
func sortedIRQs(m map[int]cpuset.Set) []int {
	out := make([]int, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
