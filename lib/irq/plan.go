package irq

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gpuprep/lib/cpuset"
)

// DeviceIRQs is a device whose IRQs are placed on its NUMA node: a GPU or
// an HCA.
type DeviceIRQs struct {
	BusID string // "0000:18:00.0", for the reasons
	IRQs  []int  // Device.IRQs()
	// NUMANode is the device's node, -1 when it has none; NodeCPUs the
	// CPUs of that node (Device.LocalCPUs, or the node's cpulist).
	NUMANode int
	NodeCPUs cpuset.Set
}

// Input is what Place needs; it reads nothing itself.
type Input struct {
	Devices []DeviceIRQs
	// Housekeeping are the CPUs host services run on; empty when the
	// profile sets none.
	Housekeeping cpuset.Set
	// JobCPUs are the CPUs of the job being started.
	JobCPUs cpuset.Set
	// IRQs are the IRQs in use with their current affinity
	// (ReadAffinities over the rows of /proc/interrupts); of an IRQ
	// given twice, the last counts.
	IRQs []Affinity
}

// Placement is the affinity gpuprep wants for one IRQ.
type Placement struct {
	IRQ  int
	From cpuset.Set // its current smp_affinity_list
	To   cpuset.Set // the one wanted
	// Device is the bus id of the device whose IRQ it is; "" for an IRQ
	// moved off the job's CPUs.
	Device string
	Reason string // "device 0000:18:00.0 on NUMA node 0 (housekeeping CPUs 0-1)"
}

// Changes says whether the placement moves the IRQ.
func (p Placement) Changes() bool { return !p.From.Equal(p.To) }

// Skip is an IRQ a rule applied to but that is left where it is.
type Skip struct {
	IRQ    int
	Device string // "" when no device claimed it
	Reason string
}

// Plan is Place's answer, each list ascending by IRQ.
type Plan struct {
	// Placements holds every IRQ a rule places, those already in place
	// included (Changes false).
	Placements []Placement
	Skipped    []Skip
}

// Changes are the placements that move an IRQ.
func (p Plan) Changes() []Placement {
	var out []Placement
	for _, pl := range p.Placements {
		if pl.Changes() {
			out = append(out, pl)
		}
	}
	return out
}

// Place computes the affinity of each IRQ by the package's rule (see the
// package documentation): device IRQs on their NUMA node's CPUs (its
// housekeeping CPUs where it has some), and, with housekeeping CPUs set,
// every other IRQ on the job's CPUs onto the housekeeping CPUs, and every
// other movable IRQ already off them kept where it is (placed all the
// same: irqbalance bans what is placed).
func Place(in Input) Plan {
	cur := currentAffinities(in.IRQs)
	claims := claimsByIRQ(in.Devices)
	var plan Plan
	fallback := placeDeviceIRQs(&plan, claims, cur, in.Housekeeping)
	placeOtherIRQs(&plan, claims, cur, fallback, in)
	slices.SortFunc(plan.Placements, func(a, b Placement) int { return a.IRQ - b.IRQ })
	slices.SortFunc(plan.Skipped, func(a, b Skip) int { return a.IRQ - b.IRQ })
	return plan
}

// currentAffinities indexes the IRQs read by number; of an IRQ given
// twice, the last counts.
func currentAffinities(as []Affinity) map[int]Affinity {
	cur := map[int]Affinity{}
	for _, a := range as {
		cur[a.IRQ] = a
	}
	return cur
}

// claimsByIRQ lists, for each IRQ, the devices that claim it, each device
// once.
func claimsByIRQ(devices []DeviceIRQs) map[int][]DeviceIRQs {
	claims := map[int][]DeviceIRQs{}
	for _, d := range devices {
		for _, n := range d.IRQs {
			if !slices.ContainsFunc(claims[n], func(o DeviceIRQs) bool { return o.BusID == d.BusID }) {
				claims[n] = append(claims[n], d)
			}
		}
	}
	return claims
}

// placeDeviceIRQs adds to plan each device IRQ placed on its NUMA node, or
// skipped where it is not in use or read-only. It returns the device IRQs
// that could not be placed by node, with why: the rule for other IRQs
// decides them.
func placeDeviceIRQs(plan *Plan, claims map[int][]DeviceIRQs, cur map[int]Affinity, hk cpuset.Set) map[int]string {
	fallback := map[int]string{}
	for _, n := range sortedKeys(claims) {
		devs := claims[n]
		dev := busIDs(devs)
		a, ok := cur[n]
		switch {
		case !ok:
			plan.Skipped = append(plan.Skipped, Skip{n, dev, "not in use (no /proc/irq/" + itoa(n) + "/ among the IRQs read)"})
		case a.ReadOnly:
			plan.Skipped = append(plan.Skipped, Skip{n, dev, readOnlyReason})
		default:
			to, why, ok := nodeTarget(devs, hk)
			if !ok {
				fallback[n] = why
				continue
			}
			plan.Placements = append(plan.Placements, Placement{IRQ: n, From: a.CPUs, To: to, Device: dev, Reason: why})
		}
	}
	return fallback
}

// placeOtherIRQs adds to plan each IRQ no device claims, and each device
// IRQ in fallback, by the rule for other IRQs.
func placeOtherIRQs(plan *Plan, claims map[int][]DeviceIRQs, cur map[int]Affinity, fallback map[int]string, in Input) {
	for _, n := range sortedKeys(cur) {
		a := cur[n]
		_, claimed := claims[a.IRQ]
		why, fell := fallback[a.IRQ]
		if claimed && !fell {
			continue
		}
		dev := ""
		if fell {
			dev = busIDs(claims[a.IRQ])
		}
		placeOtherIRQ(plan, a, dev, why, fell, in)
	}
}

// placeOtherIRQ applies the rule for other IRQs to one IRQ: with
// housekeeping CPUs set, off the job's CPUs onto them, or kept where it is
// when already off them. fell says it is a device IRQ not placed by node,
// for the reason why, and dev names its devices.
func placeOtherIRQ(plan *Plan, a Affinity, dev, why string, fell bool, in Input) {
	hk := !in.Housekeeping.IsEmpty()
	onJob := a.CPUs.Intersection(in.JobCPUs)
	switch {
	case hk && onJob.IsEmpty() && !in.JobCPUs.IsEmpty() && !a.ReadOnly:
		// Already off the job's CPUs: kept where it is, but placed
		// all the same, so that irqbalance, which bans what gpuprep
		// places, does not move it onto them at its next rescan.
		reason := "off the job's CPUs already: kept on " + a.CPUs.String()
		if fell {
			reason = why + "; " + reason
		}
		plan.Placements = append(plan.Placements, Placement{IRQ: a.IRQ, From: a.CPUs, To: a.CPUs, Device: dev, Reason: reason})
	case !hk || onJob.IsEmpty():
		if fell {
			if hk {
				why += "; not on the job's CPUs"
			} else {
				why += "; no housekeeping CPUs to move it to"
			}
			plan.Skipped = append(plan.Skipped, Skip{a.IRQ, dev, why})
		}
	case a.ReadOnly:
		plan.Skipped = append(plan.Skipped, Skip{a.IRQ, dev, readOnlyReason})
	default:
		reason := "on the job's CPUs " + onJob.String() + ": to the housekeeping CPUs"
		if fell {
			reason = why + "; " + reason
		}
		plan.Placements = append(plan.Placements, Placement{IRQ: a.IRQ, From: a.CPUs, To: in.Housekeeping, Device: dev, Reason: reason})
	}
}

// readOnlyReason is why an IRQ with a read-only smp_affinity_list stays.
const readOnlyReason = "the kernel manages its affinity (smp_affinity_list is read-only)"

// nodeTarget is the CPUs of the NUMA node of the devices sharing one IRQ
// (intersected with the housekeeping CPUs where that leaves any); ok is
// false, with why, when the devices have no node or different ones.
func nodeTarget(devs []DeviceIRQs, hk cpuset.Set) (to cpuset.Set, why string, ok bool) {
	d := devs[0]
	for _, o := range devs {
		if o.NUMANode < 0 || o.NodeCPUs.IsEmpty() {
			return cpuset.Set{}, "device " + o.BusID + " has no NUMA node", false
		}
		if o.NUMANode != d.NUMANode || !o.NodeCPUs.Equal(d.NodeCPUs) {
			return cpuset.Set{}, fmt.Sprintf("shared by devices on NUMA nodes %d and %d", d.NUMANode, o.NUMANode), false
		}
	}
	why = fmt.Sprintf("device %s on NUMA node %d", busIDs(devs), d.NUMANode)
	if both := d.NodeCPUs.Intersection(hk); !both.IsEmpty() {
		return both, why + " (its housekeeping CPUs)", true
	}
	if !hk.IsEmpty() {
		why += " (no housekeeping CPU on it)"
	}
	return d.NodeCPUs, why, true
}

// busIDs joins the bus ids of the devices sharing an IRQ.
func busIDs(devs []DeviceIRQs) string {
	ids := make([]string, len(devs))
	for i, d := range devs {
		ids[i] = d.BusID
	}
	slices.Sort(ids)
	return strings.Join(ids, ",")
}

// sortedKeys are a map's IRQ numbers, ascending.
func sortedKeys[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func itoa(n int) string { return strconv.Itoa(n) }
