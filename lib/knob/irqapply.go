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
	next, err := k.nextPlaced(old, want)
	if err != nil {
		return err
	}
	undo := unlisted(old, want)
	// Undone IRQs stay listed until they are written back, so a crash
	// meanwhile still knows them.
	if err := k.savePlaced(append(slices.Clone(next), undo...)); err != nil {
		return err
	}
	if len(next) > 0 {
		k.rescan(balancers)
	}
	problems, err := k.setAffinities(next)
	if err != nil {
		return err
	}
	if err := k.restore(undo, len(balancers) > 0); err != nil {
		return err
	}
	if err := k.savePlaced(next); err != nil {
		return err
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

// nextPlaced is the list to write, ascending by IRQ: each IRQ of want with
// what it holds now, unless gpuprep placed it already (then what it held
// before that).
func (k *irqAffinityKnob) nextPlaced(old []irq.Placed, want map[int]cpuset.Set) ([]irq.Placed, error) {
	byIRQ := map[int]irq.Placed{}
	for _, p := range old {
		byIRQ[p.IRQ] = p
	}
	var next []irq.Placed
	for _, n := range sortedIRQs(want) {
		p, ok := byIRQ[n]
		if !ok {
			a, err := irq.ReadAffinity(k.root, n)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k.id, err)
			}
			p = irq.Placed{IRQ: n, From: a.CPUs}
		}
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
func (k *irqAffinityKnob) setAffinities(next []irq.Placed) ([]string, error) {
	var problems []string
	refusedN := 0
	for i, p := range next {
		res, err := irq.Setter{Root: k.root, Files: k.f}.Set(p.IRQ, p.To)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k.id, err)
		}
		next[i].Refused = res.Refused
		switch {
		case res.Refused:
			refusedN++
		case !res.Got.Equal(p.To):
			problems = append(problems, res.Mismatch)
		case res.Mismatch != "":
			// smp_affinity_list holds; the kernel moves the IRQ at its
			// next interrupt on some chips.
			k.log.Warn("irq_affinity: effective affinity not yet moved", "irq", p.IRQ, "why", res.Mismatch)
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
func (k *irqAffinityKnob) restore(ps []irq.Placed, balanced bool) error {
	if balanced {
		if len(ps) > 0 {
			k.log.Info("irq_affinity: IRQs handed back to irqbalance", "count", len(ps))
		}
		return nil
	}
	for _, p := range ps {
		if p.Refused {
			continue
		}
		res, err := irq.Setter{Root: k.root, Files: k.f}.Set(p.IRQ, p.From)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return fmt.Errorf("%s: restoring: %w", k.id, err)
		case !res.Refused && !res.Got.Equal(p.From):
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
		return err == nil && s == strings.TrimSpace(irq.PolicyScript(irq.PlacedPath, inDir))
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

// loadPlaced reads PlacedPath through the run directory (lib/rundir:
// Env.RunDir, else opened read-only for this read); none is an empty list.
// It refuses, never follows, a symbolic link in its place (O_NOFOLLOW),
// and refuses what is not a regular file (a FIFO would block), is larger
// than a list can be, belongs to another user than this process's, or
// others may write, or lies in a run directory that is so.
func (k *irqAffinityKnob) loadPlaced() ([]irq.Placed, error) {
	var b []byte
	err := rundir.Use(k.runDir, k.root, false, func(rd *rundir.Dir) (err error) {
		b, err = rd.ReadTrusted(irq.PlacedName, maxPlacedFile)
		return err
	})
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.Is(err, dirfd.ErrSymlink):
		return nil, fmt.Errorf("%s: %s is a symbolic link: not trusted", k.id, irq.PlacedPath)
	case errors.Is(err, dirfd.ErrNotRegular):
		return nil, fmt.Errorf("%s: %s is not a regular file: not trusted", k.id, irq.PlacedPath)
	case errors.Is(err, dirfd.ErrTooLarge):
		return nil, fmt.Errorf("%s: %s is larger than %d bytes", k.id, irq.PlacedPath, maxPlacedFile)
	case err != nil:
		return nil, fmt.Errorf("%s: %w: not trusted", k.id, err)
	}
	ps, err := irq.ParsePlaced(irq.PlacedPath, b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k.id, err)
	}
	return ps, nil
}

// savePlaced replaces PlacedPath atomically through the run directory
// (mode 0644: irqbalance's sandboxed policy script reads it as another
// user), or removes it when ps is empty.
func (k *irqAffinityKnob) savePlaced(ps []irq.Placed) error {
	err := rundir.Use(k.runDir, k.root, true, func(rd *rundir.Dir) error {
		if len(ps) == 0 {
			return rd.Remove(irq.PlacedName)
		}
		return rd.WriteAtomic(irq.PlacedName, []byte(irq.FormatPlaced(ps)), 0o644)
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
