package probe

import (
	"errors"
	"time"

	"gpuprep/lib/cuda"
)

// maxRepeats bounds how many times a measurement repeats its operation.
const maxRepeats = 1000

// timing is what timed measured: n operations in elapsed, and the GPU's
// state while they ran.
type timing struct {
	n       int
	elapsed time.Duration
	during  Sample
}

// timed measures op on stream s: one operation alone (a warm-up, which also
// tells how long one takes), then as many as fill span between two events,
// with the GPU sampled (sample may be nil) when they should be half done.
func timed(s cuda.Stream, span time.Duration, sample func() (Sample, error), op func() error) (timing, error) {
	one, err := timeOps(s, 1, 0, nil, op)
	if err != nil {
		return timing{}, err
	}
	n := int(min(max(span/one.elapsed, 2), maxRepeats))
	return timeOps(s, n, time.Duration(n)*one.elapsed/2, sample, op)
}

// timeOps enqueues n operations between two events and times them. The
// calls return once the work is queued: after sampleAfter the GPU is
// sampled while it works.
func timeOps(s cuda.Stream, n int, sampleAfter time.Duration, sample func() (Sample, error), op func() error) (timing, error) {
	start, err := s.Record()
	if err != nil {
		return timing{}, err
	}
	defer start.Destroy()
	queued := time.Now()
	for range n {
		if err := op(); err != nil {
			return timing{}, err
		}
	}
	end, err := s.Record()
	if err != nil {
		return timing{}, err
	}
	defer end.Destroy()
	t := timing{n: n}
	if sample != nil {
		time.Sleep(sampleAfter - time.Since(queued))
		t.during, _ = sample() // a sample that fails leaves the fields 0: not known
	}
	if t.elapsed, err = end.Since(start); err != nil {
		return timing{}, err
	}
	if t.elapsed <= 0 {
		return timing{}, errors.New("the driver timed the operations at 0 s")
	}
	return t, nil
}

// bandwidth is a measurement of n copies of bytes each, counted count
// times (2 for a device-to-device copy: read and written).
func (t timing) bandwidth(bytes int64, count int) Measurement {
	moved := bytes * int64(t.n) * int64(count)
	return Measurement{
		GBps:    float64(moved) / t.elapsed.Seconds() / 1e9,
		Bytes:   moved,
		Seconds: t.elapsed.Seconds(),
		During:  t.during,
	}
}
