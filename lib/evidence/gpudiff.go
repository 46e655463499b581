package evidence

import (
	"fmt"
	"slices"

	"gpuprep/lib/gpu"
)

// counterState is what a counter's two readings tell.
type counterState int

const (
	known   counterState = iota // read at both ends, not gone backwards
	missing                     // absent at either end
	reset                       // went backwards, or the driver was reloaded
)

// diffGPU is what one GPU did between its two snapshots s and e, wall
// seconds apart. reload is why the driver is taken to have been reloaded
// on every GPU ("" when nothing says so yet).
func diffGPU(s, e GPUSnapshot, wall float64, reload string) GPUResult {
	r := oneEnd(s, wall, "")
	if why := unreadable(s, e); why != "" {
		r.Error = why
		return r
	}
	if reload == "" {
		reload = energyReset(*s.Counters, *e.Counters, wall)
	}
	r.DriverReloaded = reload
	for _, c := range gpu.AllCounters {
		d, st := delta(*s.Counters, *e.Counters, c)
		if st == known && reload != "" && countsFromLoad(c) {
			st = reset
		}
		switch st {
		case missing:
			r.Missing = append(r.Missing, c)
		case reset:
			r.Reset = append(r.Reset, c)
		default:
			r.add(c, d)
		}
	}
	return r
}

// unreadable says why a GPU's counters are not there at either end ("" when
// they are at both).
func unreadable(s, e GPUSnapshot) string {
	why := func(end string, g GPUSnapshot) string {
		if g.Error != "" {
			return fmt.Sprintf("counters unreadable at the %s: %s", end, g.Error)
		}
		return fmt.Sprintf("counters unreadable at the %s", end)
	}
	switch {
	case s.Counters == nil:
		return why("start", s)
	case e.Counters == nil:
		return why("end", e)
	}
	return ""
}

// delta is counter c's growth from s to e, and whether it is known.
func delta(s, e gpu.Counters, c gpu.Counter) (uint64, counterState) {
	a, okS := s.Values[c]
	b, okE := e.Values[c]
	switch {
	case !okS || !okE:
		return 0, missing
	case b < a:
		return 0, reset
	}
	return b - a, known
}

// energyReset says why the GPU's energy counter is taken to have restarted
// (it went backwards, or grew more than MaxPlausiblePowerW can in wall
// seconds), "" when it is not.
func energyReset(s, e gpu.Counters, wall float64) string {
	a, okS := s.Values[gpu.EnergyMJ]
	b, okE := e.Values[gpu.EnergyMJ]
	switch {
	case !okS || !okE:
		return ""
	case b < a:
		return "energy counter went backwards"
	case wall > 0 && float64(b-a)/1000/wall > MaxPlausiblePowerW:
		return fmt.Sprintf("energy counter jumped (%.0f W mean, above %.0f W)", float64(b-a)/1000/wall, MaxPlausiblePowerW)
	}
	return ""
}

// add sets counter c's figures in r from its growth d over r.Seconds.
func (r *GPUResult) add(c gpu.Counter, d uint64) {
	switch {
	case c == gpu.EnergyMJ:
		j := float64(d) / 1000
		r.EnergyJ = &j
		if r.Seconds > 0 {
			w := j / r.Seconds
			r.MeanPowerW = &w
		}
	case isThrottle(c):
		if r.Throttle == nil {
			r.Throttle = map[gpu.Counter]Throttle{}
		}
		sec := float64(d) / 1e9
		r.Throttle[c] = Throttle{Seconds: sec, Share: share(sec, r.Seconds)}
	default:
		if r.Errors == nil {
			r.Errors = map[gpu.Counter]uint64{}
		}
		r.Errors[c] = d
	}
}

// share is part's share of whole, capped at 1; 0 when whole is not
// positive (no time between the snapshots).
func share(part, whole float64) float64 {
	if whole <= 0 {
		return 0
	}
	return min(part/whole, 1)
}

// isThrottle says whether c is a clock-event counter (gpu.ThrottleCounters).
func isThrottle(c gpu.Counter) bool {
	return slices.Contains(gpu.ThrottleCounters, c)
}
