package nodedesc

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"gpuprep/lib/gpu"
)

// NeedsWrite says whether the prolog must (re)write the description, and
// why in a few words for the log. old and loadErr are what Load gave;
// bootID is this boot's; devs the GPUs the prolog's backend lists (light:
// from /proc/driver/nvidia, MIG devices with their GI and CI ids); cfg and
// version the prolog's configuration and cmdenv.Version. It costs no I/O.
func NeedsWrite(old *Description, loadErr error, bootID string, devs []gpu.Device, set Settings, version string) (bool, string) {
	switch p := loadProblem(loadErr); {
	case p == "missing", p == "" && old == nil:
		return true, "missing"
	case p != "":
		return true, p + ": " + loadErr.Error()
	case old.Version != Version:
		return true, fmt.Sprintf("format version %d, now %d", old.Version, Version)
	case old.BootID != bootID:
		return true, "written in another boot"
	case old.Gpuprep != version:
		return true, fmt.Sprintf("written by gpuprep %s, this is %s", old.Gpuprep, version)
	}
	if why := gpusDiffer(old, devs); why != "" {
		return true, why
	}
	switch {
	case old.ConfigFile != set.ConfigFile:
		return true, fmt.Sprintf("config file %s, now %s", old.ConfigFile, set.ConfigFile)
	case !slices.Equal(old.SlurmGPUs, set.SlurmGPUs):
		return true, "Slurm's GPU order (gres.conf) changed"
	case !sameSettings(&Description{Srunwrap: old.Srunwrap}, &Description{Srunwrap: set.Srunwrap}):
		return true, "[srunwrap] changed"
	case !sameSettings(&Description{NCCL: old.NCCL}, &Description{NCCL: set.NCCL}):
		return true, "[nccl] changed"
	}
	return false, ""
}

// loadProblem is what Load's error err says of the description, in one
// word: "missing" (ErrMissing), "stale" (ErrStale: it cannot be trusted)
// or "unreadable" (any other error); "" for no error. NeedsWrite says it in
// the prolog's log, whyNot in srunwrap's --explain.
func loadProblem(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrMissing):
		return "missing"
	case errors.Is(err, ErrStale):
		return "stale"
	}
	return "unreadable"
}

// gpusDiffer says how the described GPUs differ from devs: their number,
// UUIDs or bus ids (both lists are in bus order), or the GPU and compute
// instance ids of their MIG devices; "" when they agree.
func gpusDiffer(old *Description, devs []gpu.Device) string {
	gs := old.Node.GPUs
	if len(gs) != len(devs) {
		return fmt.Sprintf("%d GPUs, now %d", len(gs), len(devs))
	}
	for i, d := range devs {
		g := gs[i]
		if g.UUID != d.UUID || g.BusID != d.BusID {
			return fmt.Sprintf("GPU %d was %s (%s), now %s (%s)", i, g.UUID, g.BusID, d.UUID, d.BusID)
		}
		if !slices.Equal(instances(g.MIG.Devices), instances(d.MIG.Devices)) {
			return fmt.Sprintf("MIG instances of GPU %d (%s) changed", i, d.BusID)
		}
	}
	return ""
}

// instances lists MIG devices as GI, CI pairs.
func instances(ms []gpu.MIGDevice) [][2]int {
	out := make([][2]int, len(ms))
	for i, m := range ms {
		out[i] = [2]int{m.GI, m.CI}
	}
	return out
}

// sameSettings says whether a and b's settings are written alike: a
// section read back from the file compares equal to the one it was
// written from (an empty list and none are the same there).
func sameSettings(a, b *Description) bool {
	var x, y lineWriter
	encodeSettings(&x, a)
	encodeSettings(&y, b)
	return bytes.Equal(x.b.Bytes(), y.b.Bytes())
}
