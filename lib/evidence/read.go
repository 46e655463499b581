package evidence

import (
	"sync"
	"time"

	"gpuprep/lib/gpu"
)

// Take reads the counters of devs through r at now: the prolog's and the
// epilog's snapshots, and a running job's "so far". A GPU whose counters
// cannot be read is listed with the error; driver is the NVIDIA driver's
// version and bootID the kernel's boot id ("" when unknown), which tell a
// reload between two snapshots. The GPUs are read at once, one goroutine
// each: a read is mostly the driver's wait for the GPU's energy counter
// (2.7-3.2 ms on an H200), so a node's GPUs cost about one read.
func Take(r gpu.CountersReader, devs []gpu.Device, now time.Time, bootID, driver string) Snapshot {
	snap := Snapshot{Time: now, BootID: bootID, Driver: driver, GPUs: make([]GPUSnapshot, len(devs))}
	var wg sync.WaitGroup
	for i, d := range devs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			snap.GPUs[i] = read(r, d)
		}()
	}
	wg.Wait()
	return snap
}

// read is one GPU's snapshot.
func read(r gpu.CountersReader, d gpu.Device) GPUSnapshot {
	g := GPUSnapshot{UUID: d.UUID, BusID: d.BusID, Index: d.Index, Name: d.Name}
	if c, err := r.Counters(d.Index); err != nil {
		g.Error = err.Error()
	} else {
		g.Counters = &c
	}
	return g
}
