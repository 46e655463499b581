// Command nvmlprobe is the floor for a hook's NVML work, to compare
// gpuprep-prolog --dry-run against on a GPU node: nvmlInit, the handles of
// the given GPUs opened in parallel goroutines, and the reads a profile
// needs (persistence mode for the default profile; --all adds compute mode,
// application clocks and power limit). --health is the floor of
// gpuprep-prolog --health instead: the driver version, then per GPU what
// the health checks read (persistence and ECC mode, ECC counters, retired
// pages, remapped rows, throttle reasons; --nvlinks adds every link's
// state). It skips nvmlShutdown, as process exit frees NVML. See
// docs/BENCHMARKS.md.
//
// --counters instead times the backend's read of a job's cumulative
// counters (lib/gpu/nvmlgpu's Counters: one nvmlDeviceGetFieldValues call)
// on each given GPU, or every GPU, one after the other: the first read
// (which opens the GPU's handle) and the median of --reads more; then the
// values, the counters missing, and each field as the driver answered it.
// There --by index takes gpuprep's index (PCI bus order).
//
//	nvmlprobe [--by bus|index] [--all] 0000:18:00.0 0000:2a:00.0 ...
//	nvmlprobe --by index 0 1
//	nvmlprobe --health [--nvlinks] 0000:18:00.0 0000:2a:00.0 ...
//	nvmlprobe --counters [--reads 20] [0000:18:00.0 ...]
package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/spf13/pflag"

	"gpuprep/lib/gpu"
	"gpuprep/lib/gpu/nvmlgpu"
	"gpuprep/lib/host"
)

func main() {
	by := pflag.String("by", "bus", "open handles by PCI bus id (bus) or NVML index (index)")
	all := pflag.Bool("all", false, "also read compute mode, application clocks and power limit")
	health := pflag.Bool("health", false, "read what the health checks read instead")
	nvlinks := pflag.Bool("nvlinks", false, "with --health: also every NVLink's state")
	counters := pflag.Bool("counters", false, "time the read of the cumulative counters instead")
	reads := pflag.Int("reads", 20, "with --counters: reads after the first, for the median")
	pflag.Parse()
	if *counters {
		if err := probeCounters(pflag.Args(), *by, *reads); err != nil {
			fmt.Fprintln(os.Stderr, "nvmlprobe:", err)
			os.Exit(1)
		}
		return
	}
	if ret := nvml.Init(); ret != nvml.SUCCESS {
		fmt.Fprintln(os.Stderr, "nvmlprobe: init:", nvml.ErrorString(ret))
		os.Exit(1)
	}
	if *health {
		if _, ret := nvml.SystemGetDriverVersion(); ret != nvml.SUCCESS {
			fmt.Fprintln(os.Stderr, "nvmlprobe: driver version:", nvml.ErrorString(ret))
			os.Exit(1)
		}
	}
	errs := make([]error, pflag.NArg())
	var wg sync.WaitGroup
	for i, arg := range pflag.Args() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = probe(arg, *by, *all, *health, *nvlinks)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			fmt.Fprintln(os.Stderr, "nvmlprobe:", err)
			os.Exit(1)
		}
	}
}

// probe opens one GPU and reads what the profile (or the health checks) needs.
func probe(arg, by string, all, health, nvlinks bool) error {
	var h nvml.Device
	var ret nvml.Return
	if by == "index" {
		i, err := strconv.Atoi(arg)
		if err != nil {
			return fmt.Errorf("%q is not an index", arg)
		}
		h, ret = nvml.DeviceGetHandleByIndex(i)
	} else {
		h, ret = nvml.DeviceGetHandleByPciBusId(arg)
	}
	if ret != nvml.SUCCESS {
		return fmt.Errorf("GPU %s: %s", arg, nvml.ErrorString(ret))
	}
	if _, ret = h.GetPersistenceMode(); ret != nvml.SUCCESS {
		return fmt.Errorf("GPU %s: persistence: %s", arg, nvml.ErrorString(ret))
	}
	if all {
		h.GetComputeMode()
		h.GetApplicationsClock(nvml.CLOCK_SM)
		h.GetApplicationsClock(nvml.CLOCK_MEM)
		h.GetPowerManagementLimit()
		h.GetPowerManagementDefaultLimit()
	}
	if health {
		readHealth(h, nvlinks)
	}
	return nil
}

// readHealth makes the reads of the health checks (lib/health's facts,
// lib/gpu/nvmlgpu's Health, ThrottleReasons and NVLinks); answers such as
// "not supported" are as costly as values, so they are not checked.
func readHealth(h nvml.Device, nvlinks bool) {
	h.GetEccMode()
	h.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC)
	h.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.AGGREGATE_ECC)
	h.GetRetiredPages(nvml.PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS)
	h.GetRetiredPages(nvml.PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)
	h.GetRetiredPagesPendingStatus()
	h.GetRemappedRows()
	h.GetCurrentClocksEventReasons()
	if !nvlinks {
		return
	}
	for l := 0; l < nvml.NVLINK_MAX_LINKS; l++ {
		if _, ret := h.GetNvLinkState(l); ret != nvml.SUCCESS {
			return
		}
	}
}

// probeCounters opens the nvml backend light, as the prolog and epilog do,
// and times Counters on each GPU of args (every GPU when none).
func probeCounters(args []string, by string, reads int) error {
	start := time.Now()
	b, err := nvmlgpu.Open(host.NewRoot("/"))
	if err != nil {
		return err
	}
	b.Light()
	devs, err := b.Devices()
	if err != nil {
		return err
	}
	fmt.Printf("open and list %d GPUs: %v\n", len(devs), time.Since(start).Round(time.Microsecond))
	if len(args) == 0 {
		for _, d := range devs {
			args = append(args, d.BusID)
		}
	}
	for _, arg := range args {
		d, err := findGPU(devs, arg, by)
		if err != nil {
			return err
		}
		if err := timeCounters(b, d, reads); err != nil {
			return err
		}
	}
	return nil
}

// findGPU is the GPU arg names: a bus id, or with by "index" gpuprep's index.
func findGPU(devs []gpu.Device, arg, by string) (gpu.Device, error) {
	for _, d := range devs {
		if (by == "index" && strconv.Itoa(d.Index) == arg) || (by != "index" && d.BusID == gpu.CanonicalBusID(arg)) {
			return d, nil
		}
	}
	return gpu.Device{}, fmt.Errorf("no GPU %s", arg)
}

// timeCounters times the first Counters read of d and the median of reads
// more, and prints what the last read and the driver's fields say.
func timeCounters(b *nvmlgpu.NVML, d gpu.Device, reads int) error {
	t := time.Now()
	cs, err := b.Counters(d.Index)
	first := time.Since(t)
	if err != nil {
		return err
	}
	times := make([]time.Duration, max(reads, 1))
	for k := range times {
		t = time.Now()
		if cs, err = b.Counters(d.Index); err != nil {
			return err
		}
		times[k] = time.Since(t)
	}
	slices.Sort(times)
	fmt.Printf("GPU %d %s %s: Counters first %v (opens the handle), median of %d %v (min %v, max %v)\n",
		d.Index, d.BusID, d.Name, first.Round(time.Microsecond), len(times), times[len(times)/2].Round(time.Microsecond),
		times[0].Round(time.Microsecond), times[len(times)-1].Round(time.Microsecond))
	for _, c := range gpu.AllCounters {
		if v, ok := cs.Values[c]; ok {
			fmt.Printf("  %-18s %d\n", c, v)
		}
	}
	fmt.Printf("  missing: %v\n", cs.Missing)
	return printFields(b.Interface(), d)
}

// printFields reads the counters' fields once more, straight from NVML, and
// prints each as the driver answers it: return code, value type, raw value
// and latency; then nvmlDeviceGetTotalEnergyConsumption.
func printFields(lib nvml.Interface, d gpu.Device) error {
	h, ret := lib.DeviceGetHandleByPciBusId(d.BusID)
	if ret != nvml.SUCCESS {
		return fmt.Errorf("GPU %s: %s", d.BusID, nvml.ErrorString(ret))
	}
	vs := make([]nvml.FieldValue, len(gpu.AllCounters))
	for i, c := range gpu.AllCounters {
		vs[i].FieldId, _ = nvmlgpu.CounterField(c)
	}
	if ret = h.GetFieldValues(vs); ret != nvml.SUCCESS {
		return fmt.Errorf("GPU %s: field values: %s", d.BusID, nvml.ErrorString(ret))
	}
	for i, v := range vs {
		fmt.Printf("  field %3d %-18s %-24s type %d raw %#x latency %d us\n", v.FieldId, gpu.AllCounters[i],
			nvml.ErrorString(nvml.Return(v.NvmlReturn)), v.ValueType, binary.NativeEndian.Uint64(v.Value[:]), v.LatencyUsec)
	}
	e, ret := h.GetTotalEnergyConsumption()
	fmt.Printf("  nvmlDeviceGetTotalEnergyConsumption: %d mJ (%s)\n", e, nvml.ErrorString(ret))
	timeParts(lib, h, vs)
	return nil
}

// timeParts times, median of 20 each, the parts a counters read could be
// split into: the energy alone (its own call, or its field alone), every
// field but the energy, and the driver's version.
func timeParts(lib nvml.Interface, h nvml.Device, vs []nvml.FieldValue) {
	median := func(f func()) time.Duration {
		ts := make([]time.Duration, 20)
		for i := range ts {
			t := time.Now()
			f()
			ts[i] = time.Since(t)
		}
		slices.Sort(ts)
		return ts[len(ts)/2]
	}
	energy := []nvml.FieldValue{{FieldId: nvml.FI_DEV_TOTAL_ENERGY_CONSUMPTION}}
	rest := slices.Clone(vs[1:])
	fmt.Printf("  medians of 20: nvmlDeviceGetTotalEnergyConsumption %v; field values: energy alone %v, all but energy %v, all %v; nvmlSystemGetDriverVersion %v\n",
		median(func() { h.GetTotalEnergyConsumption() }),
		median(func() { h.GetFieldValues(energy) }),
		median(func() { h.GetFieldValues(rest) }),
		median(func() { h.GetFieldValues(slices.Clone(vs)) }),
		median(func() { lib.SystemGetDriverVersion() }))
}
