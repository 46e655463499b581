package isolate

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/topo"
)

// Spec is how a profile names the housekeeping CPUs, in canonical string
// form (the setting of the housekeeping_cpus knob):
//
//	""                    none: services run on every CPU (no isolation)
//	"0-3"                 an explicit CPU list (OS CPU ids)
//	"cores_per_numa:1"    N whole cores of each NUMA node that has CPUs
//	"cores_per_socket:2"  N whole cores of each socket
//
// Whole cores means every SMT sibling of a chosen core is in the set; the
// lowest-numbered cores (by their lowest CPU) are chosen first, so CPU 0,
// where the kernel's own housekeeping tends to run, is always among them.
type Spec string

// Spec prefixes for whole cores per NUMA node or per socket.
const (
	PerNUMA   = "cores_per_numa"
	PerSocket = "cores_per_socket"
)

// MaxCoresPer bounds N in cores_per_numa and cores_per_socket.
const MaxCoresPer = 64

// ParseSpec checks a setting and returns it in canonical form: a CPU list
// as lib/cpuset writes it, or "<kind>:<N>".
func ParseSpec(s string) (Spec, error) {
	s = strings.TrimSpace(s)
	if kind, n, ok := strings.Cut(s, ":"); ok {
		if kind != PerNUMA && kind != PerSocket {
			return "", fmt.Errorf("%q: want %s:<N> or %s:<N>", s, PerNUMA, PerSocket)
		}
		v, err := strconv.Atoi(n)
		if err != nil || v < 1 || v > MaxCoresPer {
			return "", fmt.Errorf("%q: the number of cores must be 1..%d", s, MaxCoresPer)
		}
		return Spec(kind + ":" + strconv.Itoa(v)), nil
	}
	set, err := cpuset.Parse(s)
	if err != nil {
		return "", err
	}
	return Spec(set.String()), nil
}

// Housekeeping resolves a Spec on a node: the CPUs host services are
// confined to. An explicit list must be a subset of the node's CPUs; N
// cores per NUMA node or socket takes every core where a node or socket has
// fewer than N (and then the services share the job's cores there).
func Housekeeping(spec Spec, n *topo.Node) (cpuset.Set, error) {
	all := cpuset.New()
	for _, c := range n.CPUs {
		all = all.Union(cpuset.New(c.ID))
	}
	kind, num, per := strings.Cut(string(spec), ":")
	if !per {
		set, err := cpuset.Parse(string(spec))
		if err != nil {
			return cpuset.Set{}, err
		}
		if extra := set.Difference(all); !extra.IsEmpty() {
			return cpuset.Set{}, fmt.Errorf("housekeeping CPUs %s: %s not online on this node (online: %s)", set, extra, all)
		}
		if set.Equal(all) {
			return cpuset.Set{}, fmt.Errorf("housekeeping CPUs %s are every CPU of the node: nothing left to keep services off", set)
		}
		return set, nil
	}
	count, err := strconv.Atoi(num)
	if err != nil || count < 1 {
		return cpuset.Set{}, fmt.Errorf("housekeeping %q: bad number of cores", spec)
	}
	var groups []cpuset.Set
	switch kind {
	case PerNUMA:
		for _, nd := range n.CPUNUMANodes() {
			groups = append(groups, nd.CPUs)
		}
	case PerSocket:
		for _, s := range n.Sockets {
			groups = append(groups, s.CPUs)
		}
	default:
		return cpuset.Set{}, fmt.Errorf("housekeeping %q: unknown kind %q", spec, kind)
	}
	if len(groups) == 0 {
		groups = []cpuset.Set{all} // no NUMA information: the node as one group
	}
	out := cpuset.New()
	for _, g := range groups {
		out = out.Union(lowestCores(n.Cores, g, count))
	}
	if out.IsEmpty() {
		return cpuset.Set{}, errors.New("housekeeping: the node lists no cores")
	}
	if out.Equal(all) {
		return cpuset.Set{}, fmt.Errorf("housekeeping %q is every CPU of the node (%s): nothing left to keep services off", spec, all)
	}
	return out, nil
}

// lowestCores is the CPUs of the first count cores (by lowest CPU id) whose
// CPUs lie in within, every SMT sibling included.
func lowestCores(cores []topo.Core, within cpuset.Set, count int) cpuset.Set {
	var in []cpuset.Set
	for _, c := range cores {
		if !c.CPUs.IsEmpty() && c.CPUs.Intersection(within).Size() > 0 {
			in = append(in, c.CPUs)
		}
	}
	slices.SortFunc(in, func(a, b cpuset.Set) int { return a.Min() - b.Min() })
	out := cpuset.New()
	for i := 0; i < len(in) && i < count; i++ {
		out = out.Union(in[i])
	}
	return out
}
