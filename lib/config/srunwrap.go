package config

import (
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gpuprep/lib/slurm"
	"gpuprep/lib/suggest"
)

// SrunwrapSection is [srunwrap]: how srunwrap places each rank of a job
// step (lib/bind) and what it does about its runtime (lib/nccl checks).
type SrunwrapSection struct {
	// GPU is how a rank gets its GPU when it sees several: GPUNarrow
	// (rank i takes visible GPU i mod n, CUDA_VISIBLE_DEVICES narrowed to
	// it), GPUKeep (rank i binds to GPU i mod n's CPUs and memory, every
	// GPU stays visible) or GPUOff (no GPU choice; CPUs and memory follow
	// every visible GPU).
	GPU string `toml:"gpu"`
	// CPUBinding: CPUKeep keeps a binding Slurm or the user made narrower
	// than the job's CPUs on this node; CPUReplace binds to the GPU's
	// CPUs anyway; CPUOff never changes the task's CPUs.
	CPUBinding string `toml:"cpu_binding"`
	// Memory is the memory policy: MemBind, MemPreferred or MemOff.
	Memory string `toml:"memory"`
	// GPUMemoryNodes allows binding memory to a CPU-less NUMA node that
	// holds GPU memory (Grace Hopper); false keeps host memory on the
	// nearest node with CPUs.
	GPUMemoryNodes bool `toml:"gpu_memory_nodes"`
	// Checks maps a check (SrunwrapChecks) to CheckWarn, CheckRefuse
	// (srunwrap exits 1 without running the command) or CheckOff.
	Checks map[string]string `toml:"checks"`
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
	Fabrics []NCCLFabric `toml:"fabric"`
}

// NCCLFabric is one [[nccl.fabric]]: where it applies and what it sets.
// A fabric with no selector applies everywhere; with several, all must
// match.
type NCCLFabric struct {
	Name       string   `toml:"name"`       // for --explain ("ib-ndr")
	Nodes      string   `toml:"nodes"`      // hostlist expression; "" any node
	Partitions []string `toml:"partitions"` // SLURM_JOB_PARTITION; [] any
	// Products are path.Match patterns against the DMI product name
	// (/sys/class/dmi/id/product_name); [] any.
	Products []string `toml:"products"`
	// IBHCA is how NCCL_IB_HCA is set: "auto" (the HCAs nearest the
	// rank's GPU), "off" (not set), or a literal value.
	IBHCA string `toml:"ib_hca"`
	// Env are variables set for every rank ("NCCL_SOCKET_IFNAME" =
	// "=bond0"); a variable the user already set wins unless Force names
	// it.
	Env   map[string]string `toml:"env"`
	Force []string          `toml:"force"`
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

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func checkSrunwrap(s *SrunwrapSection, ps *problems) {
	k := func(name ...string) []string { return append([]string{"srunwrap"}, name...) }
	checkOneOf(k("gpu"), s.GPU, []string{GPUNarrow, GPUKeep, GPUOff}, ps)
	checkOneOf(k("cpu_binding"), s.CPUBinding, []string{CPUKeep, CPUReplace, CPUOff}, ps)
	checkOneOf(k("memory"), s.Memory, []string{MemBind, MemPreferred, MemOff}, ps)
	for _, c := range slices.Sorted(maps.Keys(s.Checks)) {
		if !slices.Contains(SrunwrapChecks, c) {
			ps.add(k("checks", c), "%s: no such check (checks: %s)%s", formatKey(k("checks", c)), strings.Join(SrunwrapChecks, ", "), suggest.DidYouMean(c, SrunwrapChecks))
			continue
		}
		checkOneOf(k("checks", c), s.Checks[c], []string{CheckWarn, CheckRefuse, CheckOff}, ps)
	}
}

func checkNCCL(n *NCCLSection, ps *problems) {
	for i, f := range n.Fabrics {
		name := f.Name
		if name == "" {
			name = "#" + strconv.Itoa(i+1)
		}
		k := func(key string) []string { return []string{"nccl", "fabric", name, key} }
		if f.Nodes != "" {
			if _, err := slurm.ParseHostlist(f.Nodes); err != nil {
				ps.add(k("nodes"), "%s: not a hostlist expression: %v", formatKey(k("nodes")), err)
			}
		}
		for _, p := range f.Products {
			if _, err := path.Match(p, ""); err != nil {
				ps.add(k("products"), "%s: %q is not a pattern: %v", formatKey(k("products")), p, err)
			}
		}
		if f.IBHCA == "" {
			n.Fabrics[i].IBHCA = "auto"
		}
		if strings.ContainsRune(f.IBHCA, 0) || strings.ContainsRune(f.IBHCA, '\n') {
			ps.add(k("ib_hca"), "%s: holds a NUL or newline", formatKey(k("ib_hca")))
		}
		for _, v := range slices.Sorted(maps.Keys(f.Env)) {
			if v == "NCCL_IB_HCA" {
				// ib_hca decides it (default "auto"), so a value here would be
				// silently replaced.
				ps.add(k("env"), "%s: set NCCL_IB_HCA with ib_hca (\"auto\", \"off\" or the value), not in env", formatKey(k("env")))
			}
			if !envNameRE.MatchString(v) {
				ps.add(k("env"), "%s: %q is not an environment variable name", formatKey(k("env")), v)
			}
			if strings.ContainsRune(f.Env[v], 0) || strings.ContainsRune(f.Env[v], '\n') {
				ps.add(k("env"), "%s: %s holds a NUL or newline", formatKey(k("env")), v)
			}
		}
		for _, v := range f.Force {
			if _, ok := f.Env[v]; !ok && v != "NCCL_IB_HCA" {
				ps.add(k("force"), "%s: %q is not set in this fabric's env (or NCCL_IB_HCA)", formatKey(k("force")), v)
			}
		}
	}
}
