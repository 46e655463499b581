package evidence

import (
	"reflect"
	"testing"
	"time"

	"gpuprep/lib/gpu"
)

// Processes keeps the records whose life overlaps the job's window: not
// an earlier job's process that ended before it, nor one started after
// it; a process running since before the window, one still running, one
// ending at the window's very start are kept. Sorted by start, then PID.
func TestProcesses(t *testing.T) {
	jobStart := time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)
	jobEnd := jobStart.Add(2 * time.Hour)
	at := func(d time.Duration) time.Time { return jobStart.Add(d) }
	stats := []gpu.ProcessAccounting{
		{PID: 10, Start: at(-3 * time.Hour), Duration: time.Hour, GPUUtilPct: 99}, // an earlier job's
		{PID: 20, Start: at(30 * time.Minute), Duration: 20 * time.Minute, GPUUtilPct: 80, // the job's
			MemoryUtilPct: 30, MaxMemoryBytes: 40 << 30},
		{PID: 21, Start: at(time.Minute), Running: true, GPUUtilPct: 60, MemoryUtilPct: 10},         // still running
		{PID: 5, Start: at(time.Minute), Duration: time.Second, GPUUtilPct: gpu.NotAvailable},       // same start, lower PID
		{PID: 30, Start: at(-time.Hour), Duration: time.Hour},                                       // ends as the job starts
		{PID: 31, Start: at(-time.Hour), Running: true},                                             // running since before
		{PID: 40, Start: at(3 * time.Hour), Duration: time.Minute},                                  // a later job's
		{PID: 41, Start: at(-2 * time.Hour), Duration: time.Hour - time.Millisecond, GPUUtilPct: 1}, // just before
	}
	const g = "GPU-8c2e"
	got := Processes(g, stats, jobStart, jobEnd)
	want := []Process{
		{PID: 30, GPU: g, Start: at(-time.Hour), Seconds: 3600},
		{PID: 31, GPU: g, Start: at(-time.Hour), Seconds: 3 * 3600},
		{PID: 5, GPU: g, Start: at(time.Minute), Seconds: 1, GPUUtilPct: gpu.NotAvailable},
		{PID: 21, GPU: g, Start: at(time.Minute), Seconds: 119 * 60, GPUUtilPct: 60, MemoryUtilPct: 10},
		{PID: 20, GPU: g, Start: at(30 * time.Minute), Seconds: 1200, GPUUtilPct: 80, MemoryUtilPct: 30, MaxMemoryBytes: 40 << 30},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}

	// A window still open (zero end): later processes count; a running
	// one's time is unknown.
	open := Processes(g, stats, jobStart, time.Time{})
	if len(open) != 6 || open[5].PID != 40 || open[3].PID != 21 || open[3].Seconds != 0 {
		t.Errorf("open window: %+v", open)
	}
	if got := Processes(g, nil, jobStart, jobEnd); got != nil {
		t.Errorf("no records: %+v", got)
	}
}
