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
//	nvmlprobe [--by bus|index] [--all] 0000:18:00.0 0000:2a:00.0 ...
//	nvmlprobe --by index 0 1
//	nvmlprobe --health [--nvlinks] 0000:18:00.0 0000:2a:00.0 ...
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/spf13/pflag"
)

func main() {
	by := pflag.String("by", "bus", "open handles by PCI bus id (bus) or NVML index (index)")
	all := pflag.Bool("all", false, "also read compute mode, application clocks and power limit")
	health := pflag.Bool("health", false, "read what the health checks read instead")
	nvlinks := pflag.Bool("nvlinks", false, "with --health: also every NVLink's state")
	pflag.Parse()
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
