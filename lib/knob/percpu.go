package knob

import (
	"fmt"
	"strconv"
	"strings"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/knobval"
	"gpuprep/lib/topo"
)

// The per-CPU value scheme. A per-CPU knob (cpu_governor,
// energy_performance_preference, cstate_max_latency_us) has one value per
// CPU. When every CPU in scope agrees, its Value is that one value
// ("performance", "state2,state3", "" for cstate's none). Otherwise it is a
// list of groups "<cpus>=<value>" joined by ';', every CPU in scope in
// exactly one group, the CPU lists in lib/cpuset's canonical form and the
// groups sorted by their lowest CPU:
//
//	0-3,8=powersave;4-7,9-223=performance
//	0-111=state3;112-223=
//
// Apply takes either form, so restoring a mixed baseline is exact. A value
// is per-CPU exactly when it contains '=' (no kernel keyword does).

// cpuScope is the CPUs a per-CPU knob covers, resolved once and shared by
// the CPU knobs of one Catalog.
type cpuScope struct {
	ids []int
	pos map[int]int // CPU id -> index in ids
	err error       // reading the online CPUs failed
}

// newCPUScope is the given CPUs, or the online CPUs when cpus is empty.
func newCPUScope(f files, cpus cpuset.Set) *cpuScope {
	if cpus.IsEmpty() {
		var err error
		if cpus, err = topo.OnlineCPUs(f); err != nil {
			return &cpuScope{err: err}
		}
	}
	ids := cpus.List()
	pos := make(map[int]int, len(ids))
	for i, c := range ids {
		pos[c] = i
	}
	return &cpuScope{ids: ids, pos: pos}
}

func (s *cpuScope) list() ([]int, error) { return s.ids, s.err }

// perCPUForm is the per-CPU value scheme as a knobval.Form: numbered
// keys (CPUs) grouped by value, summed up where every CPU agrees.
var perCPUForm = knobval.Form{What: "per-CPU value", Numbered: true, Summed: true}

// formatPerCPU is the Value of vals, vals[i] being the value of CPU ids[i]
// (ids ascending).
func formatPerCPU(ids []int, vals []string) Value {
	p := make(knobval.Parts, len(ids))
	for i, id := range ids {
		p[strconv.Itoa(id)] = vals[i]
	}
	return perCPUForm.Format(p)
}

// isPerCPU reports whether v is in the per-CPU form.
func isPerCPU(v Value) bool { return strings.Contains(string(v), "=") }

// parsePerCPU gives each CPU of the scope its value from v: the one value
// for all, or the value of the group naming it. A group naming a CPU
// outside the scope, a CPU named twice or a CPU of the scope left out is an
// error.
func parsePerCPU(v Value, sc *cpuScope) ([]string, error) {
	ids, err := sc.list()
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ids))
	if !isPerCPU(v) {
		for i := range out {
			out[i] = string(v)
		}
		return out, nil
	}
	pos := sc.pos
	seen := make([]bool, len(ids))
	var outside []int
	for _, part := range strings.Split(string(v), ";") {
		list, val, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("per-CPU value %q: group %q is not <cpus>=<value>", clip(string(v)), clip(part))
		}
		set, err := cpuset.Parse(list)
		if err != nil {
			return nil, fmt.Errorf("per-CPU value %q: %w", clip(string(v)), err)
		}
		if set.IsEmpty() {
			return nil, fmt.Errorf("per-CPU value %q: group %q names no CPU", clip(string(v)), clip(part))
		}
		for _, c := range set.List() {
			i, ok := pos[c]
			if !ok {
				outside = append(outside, c)
				continue
			}
			if seen[i] {
				return nil, fmt.Errorf("per-CPU value %q: CPU %d is in two groups", clip(string(v)), c)
			}
			seen[i] = true
			out[i] = val
		}
	}
	if len(outside) > 0 {
		return nil, fmt.Errorf("per-CPU value %q: CPUs %s are not in scope (%s)", clip(string(v)),
			cpuset.New(outside...), cpuset.New(ids...))
	}
	var missing []int
	for i, ok := range seen {
		if !ok {
			missing = append(missing, ids[i])
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("per-CPU value %q: no value for CPUs %s", clip(string(v)), cpuset.New(missing...))
	}
	return out, nil
}
