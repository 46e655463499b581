package evidence

import (
	"cmp"
	"slices"
	"strings"

	"gpuprep/lib/gpu"
)

// FleetGPU is one GPU of one node over many jobs' finished records: how
// often its clocks were held down, by reason, and what it drew, so that a
// GPU or node that throttles every job stands out.
type FleetGPU struct {
	Node  string `json:"node"`
	UUID  string `json:"uuid"`
	BusID string `json:"bus_id"`
	Name  string `json:"name,omitempty"`
	// Jobs is how many jobs had the GPU to themselves; SharedJobs how many
	// shared it (their figures are not in Throttle or EnergyPerGPUHourKWh).
	Jobs       int     `json:"jobs"`
	SharedJobs int     `json:"shared_jobs"`
	GPUSeconds float64 `json:"gpu_seconds"` // the Jobs' time on the GPU
	// Throttle is by clock-event counter the share of the Jobs' time it
	// held the clocks down, over the jobs where it is known; a counter
	// known in none is absent.
	Throttle map[gpu.Counter]float64 `json:"throttle,omitempty"`
	// EnergyPerGPUHourKWh is the kWh per hour of the Jobs' time (the mean
	// kW), over the jobs where the energy is known; nil in none.
	EnergyPerGPUHourKWh *float64 `json:"energy_per_gpu_hour_kwh,omitempty"`
	// ErrorsGrew is the error counters that grew, summed over every job
	// (shared too: errors are the GPU's).
	ErrorsGrew map[gpu.Counter]uint64 `json:"errors_grew,omitempty"`
}

// MostThrottled is g's largest throttle share over the reasons (0 with
// none known).
func (g FleetGPU) MostThrottled() float64 {
	most := 0.0
	for _, s := range g.Throttle {
		most = max(most, s)
	}
	return most
}

// fleetTally is a FleetGPU being counted.
type fleetTally struct {
	g             FleetGPU
	knownSeconds  map[gpu.Counter]float64 // the Jobs' time where the counter is known
	heldSeconds   map[gpu.Counter]float64 // the time it held the clocks down
	energyJ       float64
	energySeconds float64 // the Jobs' time where the energy is known
}

// Fleet is the fleet view of many records of many jobs and nodes: one
// FleetGPU per node and GPU, of the finished records only (not Running,
// with an End). The GPUs a job shared (not attributable) count in
// SharedJobs and ErrorsGrew only: their throttle and energy figures are
// not the job's alone, so they stay out of the shares. Sorted by the
// largest throttle share first, then by node and bus id.
func Fleet(records []Record) []FleetGPU {
	tallies := map[[2]string]*fleetTally{}
	for _, r := range records {
		if r.Running || r.End == nil {
			continue
		}
		for _, g := range r.GPUs {
			k := [2]string{r.Job.Node, g.UUID}
			t := tallies[k]
			if t == nil {
				t = &fleetTally{g: FleetGPU{Node: r.Job.Node, UUID: g.UUID, BusID: g.BusID, Name: g.Name},
					knownSeconds: map[gpu.Counter]float64{}, heldSeconds: map[gpu.Counter]float64{}}
				tallies[k] = t
			}
			t.add(g)
		}
	}
	out := make([]FleetGPU, 0, len(tallies))
	for _, t := range tallies {
		out = append(out, t.result())
	}
	slices.SortFunc(out, func(a, b FleetGPU) int {
		return cmp.Or(cmp.Compare(b.MostThrottled(), a.MostThrottled()),
			strings.Compare(a.Node, b.Node), strings.Compare(a.BusID, b.BusID), strings.Compare(a.UUID, b.UUID))
	})
	return out
}

// add counts one job's result of the GPU.
func (t *fleetTally) add(g GPUResult) {
	for c, n := range g.Errors {
		if n > 0 {
			if t.g.ErrorsGrew == nil {
				t.g.ErrorsGrew = map[gpu.Counter]uint64{}
			}
			t.g.ErrorsGrew[c] += n
		}
	}
	if !g.Attributable {
		t.g.SharedJobs++
		return
	}
	t.g.Jobs++
	t.g.GPUSeconds += g.Seconds
	for c, th := range g.Throttle {
		t.knownSeconds[c] += g.Seconds
		t.heldSeconds[c] += th.Seconds
	}
	if g.EnergyJ != nil {
		t.energyJ += *g.EnergyJ
		t.energySeconds += g.Seconds
	}
}

// result is the counted FleetGPU with its shares.
func (t *fleetTally) result() FleetGPU {
	g := t.g
	for c, known := range t.knownSeconds {
		if g.Throttle == nil {
			g.Throttle = map[gpu.Counter]float64{}
		}
		g.Throttle[c] = share(t.heldSeconds[c], known)
	}
	if t.energySeconds > 0 {
		kwh := t.energyJ / JoulesPerKWh / (t.energySeconds / 3600)
		g.EnergyPerGPUHourKWh = &kwh
	}
	return g
}
