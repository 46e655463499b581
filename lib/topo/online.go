package topo

import (
	"fmt"
	"strconv"
	"strings"

	"gpuprep/lib/cpuset"
)

// onlineFile lists the CPUs the kernel runs tasks on.
const onlineFile = cpuBase + "/online"

// CPUFiles reads the small files of /sys/devices/system/cpu; host.Root is
// one.
type CPUFiles interface {
	ReadString(p string) (string, error)
	ReadDir(p string) ([]string, error)
}

// OnlineCPUs reads the node's online CPUs, /sys/devices/system/cpu/online:
// gpuprep's one reader of it (the node model here, the per-CPU knobs in
// lib/knob). Kernels without that file (before 2.6.37, some containers)
// get what hwloc does there: every cpu<N> directory whose cpu<N>/online does
// not hold 0. An unreadable, malformed or empty list is an error naming the
// file.
func OnlineCPUs(r CPUFiles) (cpuset.Set, error) {
	s, err := r.ReadString(onlineFile)
	if isNotExist(err) {
		return onlineFromDirs(r)
	}
	if err != nil {
		return cpuset.Set{}, fmt.Errorf("online CPUs: %w", err)
	}
	set, err := cpuset.Parse(s)
	if err != nil {
		return cpuset.Set{}, fmt.Errorf("%s: %w", onlineFile, err)
	}
	if set.IsEmpty() {
		return cpuset.Set{}, fmt.Errorf("%s: no CPU is online", onlineFile)
	}
	return set, nil
}

// onlineFromDirs lists the cpu<N> directories of /sys/devices/system/cpu
// and keeps those whose cpu<N>/online is absent (the boot CPU has none) or
// not 0.
func onlineFromDirs(r CPUFiles) (cpuset.Set, error) {
	names, err := r.ReadDir(cpuBase)
	if err != nil {
		return cpuset.Set{}, fmt.Errorf("online CPUs: no %s and %w", onlineFile, err)
	}
	var ids []int
	for _, name := range names {
		id, err := strconv.Atoi(strings.TrimPrefix(name, "cpu"))
		if err != nil || !strings.HasPrefix(name, "cpu") || id < 0 {
			continue
		}
		v, err := r.ReadString(cpuBase + "/" + name + "/online")
		if err != nil && !isNotExist(err) {
			return cpuset.Set{}, fmt.Errorf("online CPUs: %w", err)
		}
		if err == nil && v == "0" {
			continue
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return cpuset.Set{}, fmt.Errorf("online CPUs: no %s and no cpu<N> directory under %s", onlineFile, cpuBase)
	}
	return cpuset.New(ids...), nil
}
