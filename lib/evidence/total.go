package evidence

import (
	"slices"
	"strings"

	"gpuprep/lib/gpu"
)

// JoulesPerKWh is how many joules make a kilowatt-hour.
const JoulesPerKWh = 3.6e6

// sumTotal is the total over gs, GPUs of a job that ran wall seconds.
// Energy, mean power and each throttle counter are known only when known
// on every GPU; the errors are summed over the GPUs where they are known.
// Unknown names the GPUs where a figure is not known, and why.
func sumTotal(gs []GPUResult, wall float64) *Total {
	t := &Total{GPUs: len(gs), Seconds: wall}
	for _, g := range gs {
		t.GPUSeconds += g.Seconds
	}
	var u unknowns
	if len(gs) > 0 {
		sumEnergy(t, gs, &u)
		sumThrottle(t, gs, &u)
	}
	sumErrors(t, gs, &u)
	t.Unknown = u.lines()
	return t
}

// sumEnergy sets t's energy and mean power per GPU from gs (not empty).
func sumEnergy(t *Total, gs []GPUResult, u *unknowns) {
	var joules, watts float64
	joulesKnown, wattsKnown := true, true
	for _, g := range gs {
		if g.EnergyJ == nil {
			joulesKnown = false
			u.add(g, "energy", gpu.EnergyMJ)
		} else {
			joules += *g.EnergyJ
		}
		if g.MeanPowerW == nil {
			wattsKnown = false
			if g.EnergyJ != nil {
				u.addWhy(g, "mean power", "no time between the snapshots")
			}
		} else {
			watts += *g.MeanPowerW
		}
	}
	if joulesKnown {
		kwh := joules / JoulesPerKWh
		t.EnergyJ, t.EnergyKWh = &joules, &kwh
	}
	if wattsKnown {
		mean := watts / float64(len(gs))
		t.MeanPowerW = &mean
	}
}

// sumThrottle sets t's throttle counters known on every GPU of gs (not
// empty), their shares of t.GPUSeconds.
func sumThrottle(t *Total, gs []GPUResult, u *unknowns) {
	for _, c := range gpu.ThrottleCounters {
		var sec float64
		ok := true
		for _, g := range gs {
			th, known := g.Throttle[c]
			if !known {
				ok = false
				u.add(g, CounterLabel(c), c)
				continue
			}
			sec += th.Seconds
		}
		if ok {
			if t.Throttle == nil {
				t.Throttle = map[gpu.Counter]Throttle{}
			}
			t.Throttle[c] = Throttle{Seconds: sec, Share: share(sec, t.GPUSeconds)}
		}
	}
}

// sumErrors sets t's errors: each error counter summed over the GPUs of
// gs where it is known; u notes the others.
func sumErrors(t *Total, gs []GPUResult, u *unknowns) {
	for _, g := range gs {
		for _, c := range gpu.ErrorCounters {
			n, ok := g.Errors[c]
			if !ok {
				u.add(g, CounterLabel(c), c)
				continue
			}
			if t.Errors == nil {
				t.Errors = map[gpu.Counter]uint64{}
			}
			t.Errors[c] += n
		}
	}
}

// errorsPartial says whether an error counter of gs's total is known on
// some GPUs of gs but not all: its sum leaves some out.
func errorsPartial(gs []GPUResult) bool {
	for _, c := range gpu.ErrorCounters {
		some, all := false, true
		for _, g := range gs {
			_, ok := g.Errors[c]
			some, all = some || ok, all && ok
		}
		if some && !all {
			return true
		}
	}
	return false
}

// whyUnknown says why counter c's figure of g is unknown.
func whyUnknown(g GPUResult, c gpu.Counter) string {
	switch {
	case g.Error != "":
		return g.Error
	case slices.Contains(g.Missing, c):
		return "missing"
	case slices.Contains(g.Reset, c) && g.DriverReloaded != "" && countsFromLoad(c):
		return "reset: " + g.DriverReloaded
	case slices.Contains(g.Reset, c):
		return "went backwards"
	}
	return "not read"
}

// unknowns gathers Total.Unknown: by figure and why, the GPUs that made
// the figure unknown, in the order first met.
type unknowns struct {
	keys []unknownKey
	gpus map[unknownKey][]string
}

type unknownKey struct{ figure, why string }

// add notes that figure, counter c's, is unknown on GPU g: "every figure"
// when g has none.
func (u *unknowns) add(g GPUResult, figure string, c gpu.Counter) {
	if g.Error != "" {
		figure = "every figure"
	}
	u.addWhy(g, figure, whyUnknown(g, c))
}

// addWhy notes that figure is unknown on GPU g for why.
func (u *unknowns) addWhy(g GPUResult, figure, why string) {
	k := unknownKey{figure, why}
	if u.gpus == nil {
		u.gpus = map[unknownKey][]string{}
	}
	if _, ok := u.gpus[k]; !ok {
		u.keys = append(u.keys, k)
	}
	if !slices.Contains(u.gpus[k], g.UUID) {
		u.gpus[k] = append(u.gpus[k], g.UUID)
	}
}

// lines are the notes, the figures unknown on the same GPUs for the same
// reason on one line: "energy, power cap on GPU-a, GPU-b: missing"; nil
// for none.
func (u *unknowns) lines() []string {
	type group struct{ gpus, why string }
	var order []group
	figures := map[group][]string{}
	for _, k := range u.keys {
		g := group{strings.Join(u.gpus[k], ", "), k.why}
		if _, ok := figures[g]; !ok {
			order = append(order, g)
		}
		figures[g] = append(figures[g], k.figure)
	}
	var out []string
	for _, g := range order {
		out = append(out, strings.Join(figures[g], ", ")+" on "+g.gpus+": "+g.why)
	}
	return out
}
