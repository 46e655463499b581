package topo

import (
	"fmt"

	"gpuprep/lib/cpuset"
)

// onlineFile lists the CPUs the kernel runs tasks on.
const onlineFile = "/sys/devices/system/cpu/online"

// StringReader reads one small file; host.Root is one.
type StringReader interface {
	ReadString(p string) (string, error)
}

// OnlineCPUs reads the node's online CPUs, /sys/devices/system/cpu/online:
// gpuprep's one reader of it (the node model here, the per-CPU knobs in
// lib/knob). An unreadable, malformed or empty list is an error naming the
// file.
func OnlineCPUs(r StringReader) (cpuset.Set, error) {
	s, err := r.ReadString(onlineFile)
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
