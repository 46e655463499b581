package evidence

import (
	"errors"
	"sync"
	"testing"
	"time"

	"gpuprep/lib/gpu"
)

// slowCounters answers after a pause, counting the reads in flight at once.
type slowCounters struct {
	mu        sync.Mutex
	now, most int
	failIndex int
	pause     time.Duration
}

func (s *slowCounters) Counters(index int) (gpu.Counters, error) {
	s.mu.Lock()
	s.now++
	s.most = max(s.most, s.now)
	s.mu.Unlock()
	time.Sleep(s.pause)
	s.mu.Lock()
	s.now--
	s.mu.Unlock()
	if index == s.failIndex {
		return gpu.Counters{}, errors.New("GPU is lost")
	}
	return gpu.Counters{Values: map[gpu.Counter]uint64{gpu.EnergyMJ: uint64(index)}}, nil
}

// Take reads every GPU at once and keeps them in the order given, a
// failed one with its error.
func TestTakeReadsTheGPUsAtOnce(t *testing.T) {
	r := &slowCounters{failIndex: 2, pause: 50 * time.Millisecond}
	devs := []gpu.Device{{Index: 3, UUID: "GPU-3"}, {Index: 2, UUID: "GPU-2"}, {Index: 0, UUID: "GPU-0"}}
	s := Take(r, devs, time.Now(), "", "")
	if r.most != len(devs) {
		t.Errorf("%d reads at once, want %d", r.most, len(devs))
	}
	if len(s.GPUs) != 3 || s.GPUs[0].UUID != "GPU-3" || s.GPUs[0].Counters.Values[gpu.EnergyMJ] != 3 ||
		s.GPUs[1].Counters != nil || s.GPUs[1].Error == "" || s.GPUs[2].Counters.Values[gpu.EnergyMJ] != 0 {
		t.Fatalf("snapshot %+v", s.GPUs)
	}
}
