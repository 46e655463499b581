package evidence

import (
	"cmp"
	"slices"
	"time"

	"gpuprep/lib/gpu"
)

// Processes picks out of one GPU's accounting records (gpu.AccountingReader,
// the gpu_accounting knob) the processes whose life overlaps the job's
// window [start, end], sorted by start (then PID). NVML keeps the records
// of every process since the mode was turned on, other jobs' included, so
// the window is what makes them the job's. A process that ended lived
// from its Start for its Duration; one still running lives on past end. A
// zero end leaves the window open (a job still running).
//
// Seconds is the process's Duration; for one still running (NVML reports
// 0 then), the time from its start to end, or 0 with a zero end.
func Processes(gpuUUID string, stats []gpu.ProcessAccounting, start, end time.Time) []Process {
	var out []Process
	for _, s := range stats {
		last := s.Start.Add(s.Duration)
		if (!end.IsZero() && s.Start.After(end)) || (!s.Running && last.Before(start)) {
			continue
		}
		secs := s.Duration.Seconds()
		if s.Running {
			secs = 0
			if !end.IsZero() && end.After(s.Start) {
				secs = end.Sub(s.Start).Seconds()
			}
		}
		out = append(out, Process{PID: s.PID, GPU: gpuUUID, Start: s.Start, Seconds: secs,
			GPUUtilPct: s.GPUUtilPct, MemoryUtilPct: s.MemoryUtilPct, MaxMemoryBytes: s.MaxMemoryBytes})
	}
	slices.SortStableFunc(out, func(a, b Process) int {
		return cmp.Or(a.Start.Compare(b.Start), cmp.Compare(a.PID, b.PID))
	})
	return out
}
