package knob

import (
	"slices"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
)

// Env is what Catalog needs to know of the node and the job.
type Env struct {
	Root host.Root
	// CPUs are the CPUs the per-CPU knobs cover; empty means the online
	// CPUs (/sys/devices/system/cpu/online, read once).
	CPUs cpuset.Set
	// GPU is the backend of the GPU knobs; nil for none.
	GPU gpu.Backend
	// GPUs are the job's GPUs: each gets its own GPU knobs.
	GPUs []gpu.Device
}

// NodeKnobNames are the node-wide knobs, in the order Catalog gives them
// (the configuration's; cpu_governor before energy_performance_preference
// matters, see cpufreqKnob).
var NodeKnobNames = []string{
	"cpu_governor", "energy_performance_preference", "cstate_max_latency_us",
	"thp_enabled", "thp_defrag",
	"vm_swappiness", "vm_dirty_ratio", "vm_dirty_background_ratio", "vm_zone_reclaim_mode",
	"kernel_numa_balancing",
}

// GPUKnobNames are the knobs of each GPU, in the order GPUKnobs gives them.
var GPUKnobNames = []string{
	"gpu_persistence", "gpu_compute_mode", "gpu_locked_clocks_mhz", "gpu_app_clocks_mhz", "gpu_power_limit_w",
}

// IsGPUKnob reports whether name is a per-GPU knob.
func IsGPUKnob(name string) bool { return slices.Contains(GPUKnobNames, name) }

// Catalog returns every knob in scope: the node knobs (NodeKnobNames
// order), then each listed GPU's knobs (GPUKnobNames order) when env.GPU is
// set. Knobs absent on the node are included; their Read says
// ErrUnsupported. Building it reads at most the online CPU list.
func Catalog(env Env) []Knob {
	return append(NodeKnobs(env.Root, env.CPUs), gpuKnobsOf(env)...)
}

// NodeKnobs returns the node knobs over root for cpus (empty: the online
// CPUs).
func NodeKnobs(root host.Root, cpus cpuset.Set) []Knob {
	return nodeKnobs(root, cpus)
}

func nodeKnobs(f files, cpus cpuset.Set) []Knob {
	sc := newCPUScope(f, cpus)
	return []Knob{
		newGovernor(f, sc),
		newEPP(f, sc),
		newCState(f, sc),
		newTHP(f, "thp_enabled", "enabled"),
		newTHP(f, "thp_defrag", "defrag"),
		newSysctl(f, "vm_swappiness"),
		newSysctl(f, "vm_dirty_ratio"),
		newSysctl(f, "vm_dirty_background_ratio"),
		newSysctl(f, "vm_zone_reclaim_mode"),
		newSysctl(f, "kernel_numa_balancing"),
	}
}

func gpuKnobsOf(env Env) []Knob {
	if env.GPU == nil {
		return nil
	}
	var out []Knob
	for _, d := range env.GPUs {
		out = append(out, GPUKnobs(env.GPU, d)...)
	}
	return out
}

// Find returns the knob with the given ID, or nil.
func Find(knobs []Knob, id ID) Knob {
	for _, k := range knobs {
		if k.ID() == id {
			return k
		}
	}
	return nil
}

// ByName returns the knobs with the given key name, one per scope, in
// order.
func ByName(knobs []Knob, name string) []Knob {
	var out []Knob
	for _, k := range knobs {
		if k.ID().Name == name {
			out = append(out, k)
		}
	}
	return out
}

// ByScope returns the knobs of one scope (NodeScope, or GPUScope(uuid)),
// in order.
func ByScope(knobs []Knob, scope string) []Knob {
	var out []Knob
	for _, k := range knobs {
		if k.ID().Scope == scope {
			out = append(out, k)
		}
	}
	return out
}
