// Package bind plans where each local rank of a Slurm job step runs (its
// GPU, CPUs, memory nodes and nearest HCAs) from a node description and the
// task's environment, and applies a plan to the calling thread before it
// execs the command. Planning is pure: PlanNode and PlanRank do no I/O and
// never fail; problems become Warnings and an unbound plan, so the command
// still runs. PlanRank costs the same for a step of 8 ranks on the node
// and of 65533 (layout).
package bind

import (
	"gpuprep/lib/cpuset"
	"gpuprep/lib/slurm"
	"gpuprep/lib/srunconf"
	"gpuprep/lib/topo"
)

// Input is everything the planner needs; no I/O happens in PlanRank/PlanNode.
type Input struct {
	// Node is the node description: GPUs with NUMA, CPUAffinity,
	// MemoryNUMANodes and Place; NUMA nodes with Distances; Cores; NICs
	// with Ports.
	Node *topo.Node
	Task slurm.Task
	// Allowed is the task's CPU affinity (sched_getaffinity).
	Allowed cpuset.Set
	// JobCPUs are the CPUs the job may use on this node (its cgroup's
	// effective cpuset); empty is unknown, taken as Allowed.
	JobCPUs cpuset.Set
	Config  srunconf.SrunwrapSection
	// SlurmGPUs is the /dev/nvidia minor of each of Slurm's GPU indexes
	// (SLURM_STEP_GPUS numbers GPUs in gres.conf order), as the prolog
	// read gres.conf; nil when unknown: Slurm's indexes are then taken as
	// the node's, in PCI bus order (as gpuprep-gres writes gres.conf).
	SlurmGPUs []int
	// Brief skips the explanations: the plans' From texts (GPUChoice.From,
	// CPUsFrom, MemFrom, HCAFrom) are not worked out, so read them only
	// from a plan made without Brief (--explain). Everything else,
	// Warnings included, is the same. A task that only applies its plan
	// sets it: it saves formatting a few strings.
	Brief bool
}

// Warning is something a rank's user should know. Check is one of
// srunconf.SrunwrapChecks ("placement", "memory_policy", ...), or "input" for
// a bad environment or node description.
type Warning struct {
	Check string `json:"check"`
	Msg   string `json:"msg"`
}

// CheckInput is Warning.Check for bad input (environment, node description).
const CheckInput = "input"

// GPUChoice is the GPU a rank takes.
type GPUChoice struct {
	Index int    `json:"index"` // the node's GPU index (PCI bus order)
	UUID  string `json:"uuid"`
	MIG   string `json:"mig,omitempty"` // MIG device UUID; "" for a whole GPU
	BusID string `json:"bus_id"`
	NUMA  int    `json:"numa"`
	// From says where the choice came from:
	// "CUDA_VISIBLE_DEVICES=GPU-… (local rank 3 of 8, GPU 3 mod 8)".
	From string `json:"from"`
}

// Plan is one local rank's placement.
type Plan struct {
	LocalID int        `json:"local_id"`
	GPU     *GPUChoice `json:"gpu"` // nil: no GPU for this rank
	// Visible is the CUDA_VISIBLE_DEVICES to set; "" leaves it as it is.
	Visible  string     `json:"visible,omitempty"`
	CPUs     cpuset.Set `json:"cpus"` // the affinity to set; empty leaves it
	CPUsFrom string     `json:"cpus_from"`
	// MemNodes are the NUMA nodes of the memory policy, nearest first; nil
	// leaves the policy as it is.
	MemNodes  []int  `json:"mem_nodes"`
	MemPolicy string `json:"mem_policy"` // srunconf.MemBind, srunconf.MemPreferred or srunconf.MemOff
	MemFrom   string `json:"mem_from"`
	// HCAs are NCCL_IB_HCA entries ("mlx5_0:1", device:port), nearest
	// first; nil when none was found.
	HCAs     []string  `json:"hcas"`
	HCAFrom  string    `json:"hca_from"`
	Warnings []Warning `json:"warnings,omitempty"`
}

// PlanNode plans every local rank of the step on this node
// (Task.LocalTasks(), else 1, and at least up to Task.LocalID). Ranks' CPU
// runs are disjoint wherever the CPUs suffice. Its cost grows with the
// rank count (one plan each); PlanRank's does not.
func PlanNode(in Input) []Plan {
	l := newLayout(in, rankCount(in, in.Task.LocalID))
	plans := make([]Plan, l.nr)
	for i := range plans {
		plans[i] = l.plan(i)
	}
	return plans
}

// PlanRank is PlanNode(in)[localID]: one rank's plan, made knowing its
// neighbours (CPU runs and HCAs are shared out among them) without
// planning them: its time and memory do not grow with the rank count. It
// never fails: problems become Warnings and an unbound plan.
func PlanRank(in Input, localID int) Plan {
	if localID < 0 {
		return Plan{LocalID: localID, MemPolicy: srunconf.MemOff, Warnings: []Warning{{CheckInput,
			"negative local rank id: running unbound"}}}
	}
	return newLayout(in, rankCount(in, localID)).plan(localID)
}

func rankCount(in Input, localID int) int {
	return max(in.Task.LocalTasks(), localID+1, 1)
}
