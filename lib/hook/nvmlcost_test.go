package hook

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"gpuprep/lib/gpu"
	"gpuprep/lib/gpu/nvmlgpu"
)

// What a prolog pays NVML for, as the hooks open the backend (gpu.Light):
// no NVML listing, a handle for each of the job's GPUs and for no other,
// all of them opened at once, and only the settings fields the profile's
// knobs need. The handle opens wait at a barrier until all the job's GPUs
// have arrived, so opening them one after another fails the test (after a
// generous timeout) instead of merely being slower.
func TestPrologPaysNVMLOnlyForTheJob(t *testing.T) {
	e := newEnv(t, "dgxh100", "mock:dgxh100")
	gpu.Light(e.gpu)
	srv := e.gpu.(*nvmlgpu.NVML).Interface().(*server.Server)
	job := []int{1, 3, 4, 6}
	var mu sync.Mutex
	var opened []string
	all := make(chan struct{})
	open := srv.DeviceGetHandleByPciBusIdFunc
	srv.DeviceGetHandleByPciBusIdFunc = func(bus string) (nvml.Device, nvml.Return) {
		mu.Lock()
		opened = append(opened, bus)
		if len(opened) == len(job) {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
		case <-time.After(20 * time.Second):
			t.Errorf("handle %s opened alone: the job's handles are not opened in parallel", bus)
		}
		return open(bus)
	}
	srv.DeviceGetCountFunc = func() (int, nvml.Return) {
		t.Error("the prolog listed GPUs through NVML")
		return len(srv.Devices), nvml.SUCCESS
	}
	var clockReads int
	for _, d := range srv.Devices {
		d := d.(*server.Device)
		get := d.GetApplicationsClockFunc
		d.GetApplicationsClockFunc = func(c nvml.ClockType) (uint32, nvml.Return) {
			mu.Lock()
			clockReads++
			mu.Unlock()
			return get(c)
		}
	}
	devs, err := e.gpu.Devices()
	if err != nil {
		t.Fatal(err)
	}
	out := e.prolog(7, job, "")
	if len(out.Changes) == 0 {
		t.Fatal("prolog changed nothing")
	}
	var want []string
	for _, i := range job {
		want = append(want, devs[i].BusID)
	}
	slices.Sort(opened)
	if !slices.Equal(opened, want) {
		t.Errorf("handles opened for %v, want the job's %v", opened, want)
	}
	if clockReads != 0 {
		t.Errorf("%d application-clock reads for a profile that sets no clocks", clockReads)
	}
}

// On a node with a GPU in MIG mode (mock:dgxa100's GPU 0), a job on whole
// GPUs pays nothing for the MIG devices: its prolog and epilog open no
// handle of the MIG GPU (the MIG devices' UUIDs are read only where a
// job's GPU is in MIG mode).
func TestWholeGPUJobPaysNoMIGRead(t *testing.T) {
	e := newEnv(t, "dgxa100", "mock:dgxa100")
	gpu.Light(e.gpu)
	srv := e.gpu.(*nvmlgpu.NVML).Interface().(*server.Server)
	devs, err := e.gpu.Devices()
	if err != nil {
		t.Fatal(err)
	}
	if len(devs[0].MIG.Devices) == 0 {
		t.Fatalf("mock:dgxa100 GPU 0 has no MIG devices: %+v", devs[0].MIG)
	}
	var mu sync.Mutex
	var opened []string
	open := srv.DeviceGetHandleByPciBusIdFunc
	srv.DeviceGetHandleByPciBusIdFunc = func(bus string) (nvml.Device, nvml.Return) {
		mu.Lock()
		opened = append(opened, bus)
		mu.Unlock()
		return open(bus)
	}
	e.prolog(7, []int{1, 2}, "")
	e.epilog(7)
	if slices.Contains(opened, devs[0].BusID) {
		t.Errorf("a job on GPUs 1 and 2 opened MIG GPU 0 (%s): handles %v", devs[0].BusID, opened)
	}
	if len(opened) == 0 {
		t.Error("no handle opened at all: the test does not see the hooks' NVML")
	}
}
