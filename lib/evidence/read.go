package evidence

import (
	"time"

	"gpuprep/lib/gpu"
)

// Take reads the counters of devs through r at now: the prolog's and the
// epilog's snapshots, and a running job's "so far". A GPU whose counters
// cannot be read is listed with the error; driver is the NVIDIA driver's
// version and bootID the kernel's boot id ("" when unknown), which tell a
// reload between two snapshots.
func Take(r gpu.CountersReader, devs []gpu.Device, now time.Time, bootID, driver string) Snapshot {
	snap := Snapshot{Time: now, BootID: bootID, Driver: driver}
	for _, d := range devs {
		g := GPUSnapshot{UUID: d.UUID, BusID: d.BusID, Index: d.Index, Name: d.Name}
		if c, err := r.Counters(d.Index); err != nil {
			g.Error = err.Error()
		} else {
			g.Counters = &c
		}
		snap.GPUs = append(snap.GPUs, g)
	}
	return snap
}
