// Package srunconf is srunwrap's part of the configuration as plain data:
// the [srunwrap] section (how ranks are placed, what each runtime check
// does) and the [[nccl.fabric]] tables (NCCL variables per fabric). lib/config
// reads and validates them from gpuprep.toml; the prolog copies them into
// the node description (lib/nodedesc), so that srunwrap, which runs once
// per task, needs neither the TOML parser nor the rest of the
// configuration.
package srunconf

import (
	"path"
	"slices"

	"gpuprep/lib/slurm"
)

// SrunwrapSection is [srunwrap]: how srunwrap places each rank of a job
// step (lib/bind) and what it does about its runtime (lib/nccl checks).
type SrunwrapSection struct {
	// GPU is how a rank gets its GPU when it sees several: GPUNarrow
	// (rank i takes visible GPU i mod n, CUDA_VISIBLE_DEVICES narrowed to
	// it), GPUKeep (rank i binds to GPU i mod n's CPUs and memory, every
	// GPU stays visible) or GPUOff (no GPU choice; CPUs and memory follow
	// every visible GPU).
	GPU string `toml:"gpu" json:"gpu"`
	// CPUBinding: CPUKeep keeps a binding Slurm or the user made narrower
	// than the job's CPUs on this node; CPUReplace binds to the GPU's
	// CPUs anyway; CPUOff never changes the task's CPUs.
	CPUBinding string `toml:"cpu_binding" json:"cpu_binding"`
	// Memory is the memory policy: MemBind, MemPreferred or MemOff.
	Memory string `toml:"memory" json:"memory"`
	// GPUMemoryNodes allows binding memory to a CPU-less NUMA node that
	// holds GPU memory (Grace Hopper); false keeps host memory on the
	// nearest node with CPUs.
	GPUMemoryNodes bool `toml:"gpu_memory_nodes" json:"gpu_memory_nodes"`
	// Checks maps a check (SrunwrapChecks) to CheckWarn, CheckRefuse
	// (srunwrap exits 1 without running the command) or CheckOff.
	Checks map[string]string `toml:"checks" json:"checks"`
}

// srunwrap.gpu, srunwrap.cpu_binding, srunwrap.memory and check values.
const (
	GPUNarrow    = "narrow"
	GPUKeep      = "keep"
	GPUOff       = "off"
	CPUKeep      = "keep"
	CPUReplace   = "replace"
	CPUOff       = "off"
	MemBind      = "bind"
	MemPreferred = "preferred"
	MemOff       = "off"
	CheckWarn    = "warn"
	CheckRefuse  = "refuse"
	CheckOff     = "off"
)

// SrunwrapChecks names srunwrap's runtime checks.
var SrunwrapChecks = []string{
	"placement",      // the task may not use its GPU's CPUs (allowed set misses the NUMA node)
	"nccl_topo_file", // NCCL_TOPO_FILE exists and parses in the task's mount namespace
	"nccl_hca",       // the HCAs NCCL_IB_HCA names exist here
	"memlock",        // RLIMIT_MEMLOCK allows pinned memory
	"nccl_env",       // inherited NCCL variables that cost bandwidth
	"memory_policy",  // set_mempolicy was refused and fell back
}

// SrunwrapCheck is check's action: its [srunwrap.checks] entry, else
// CheckWarn.
func (s SrunwrapSection) SrunwrapCheck(check string) string {
	if a, ok := s.Checks[check]; ok {
		return a
	}
	return CheckWarn
}

// NCCLSection is [nccl]: the NCCL variables srunwrap sets per fabric.
type NCCLSection struct {
	// Fabrics apply in file order, each when it matches this node; a
	// later one overrides an earlier one's variables.
	Fabrics []NCCLFabric `toml:"fabric" json:"fabric"`
}

// NCCLFabric is one [[nccl.fabric]]: where it applies and what it sets.
// A fabric with no selector applies everywhere; with several, all must
// match.
type NCCLFabric struct {
	Name       string   `toml:"name" json:"name"`             // for --explain ("ib-ndr")
	Nodes      string   `toml:"nodes" json:"nodes"`           // hostlist expression; "" any node
	Partitions []string `toml:"partitions" json:"partitions"` // SLURM_JOB_PARTITION; [] any
	// Products are path.Match patterns against the DMI product name
	// (/sys/class/dmi/id/product_name); [] any.
	Products []string `toml:"products" json:"products"`
	// IBHCA is how NCCL_IB_HCA is set: "auto" (the HCAs nearest the
	// rank's GPU), "off" (not set), or a literal value.
	IBHCA string `toml:"ib_hca" json:"ib_hca"`
	// Env are variables set for every rank ("NCCL_SOCKET_IFNAME" =
	// "=bond0"); a variable the user already set wins unless Force names
	// it.
	Env   map[string]string `toml:"env" json:"env"`
	Force []string          `toml:"force" json:"force"`
}

// Matches says whether f applies to node (short host name), partition and
// DMI product.
func (f NCCLFabric) Matches(node, partition, product string) bool {
	if f.Nodes != "" {
		hl, err := slurm.ParseHostlist(f.Nodes)
		if err != nil || !hl.Contains(node) {
			return false
		}
	}
	if len(f.Partitions) > 0 && !slices.Contains(f.Partitions, partition) {
		return false
	}
	if len(f.Products) > 0 {
		ok := false
		for _, p := range f.Products {
			if m, _ := path.Match(p, product); m {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// Defaults are the built-in [srunwrap] settings (lib/config's
// defaults.toml holds the same; its tests keep them equal): what srunwrap
// uses when there is no node description to take the site's from.
func Defaults() SrunwrapSection {
	checks := make(map[string]string, len(SrunwrapChecks))
	for _, c := range SrunwrapChecks {
		checks[c] = CheckWarn
	}
	return SrunwrapSection{GPU: GPUNarrow, CPUBinding: CPUKeep, Memory: MemBind, Checks: checks}
}
