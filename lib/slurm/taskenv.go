package slurm

import (
	"fmt"
	"strconv"

	"gpuprep/lib/plural"
)

// Task is what one task of `srun` learns from its environment (Slurm
// 22.05; see ../shared/notes/slurm-facts.md). Note SLURM_LOCALID, not
// SLURM_LOCAL_ID, and that SLURM_JOB_GPUS is not set in srun tasks.
type Task struct {
	JobID   uint64 // SLURM_JOB_ID; 0 when unset
	StepID  string // SLURM_STEP_ID; "" when unset
	ProcID  int    // SLURM_PROCID: global rank (required)
	LocalID int    // SLURM_LOCALID: rank on this node (required)
	NodeID  int    // SLURM_NODEID: this node's index in the step; 0 when unset
	NTasks  int    // SLURM_NTASKS; 0 when unset
	// TasksPerNode is SLURM_STEP_TASKS_PER_NODE, else SLURM_TASKS_PER_NODE,
	// expanded ("2(x3),1" is 2,2,2,1); nil when neither is set.
	TasksPerNode []int
	// StepGPUs is SLURM_STEP_GPUS: the step's GPU indices on this node as
	// Slurm numbers them (PCI bus order); nil when unset.
	StepGPUs []int
	// GPUsOnNode is SLURM_GPUS_ON_NODE; 0 when unset.
	GPUsOnNode int
	// VisibleDevices is CUDA_VISIBLE_DEVICES: indices as the task sees them
	// (renumbered from 0 when cgroups confine devices) or GPU-/MIG- UUIDs
	// (MIG, and whole GPUs on newer Slurm); nil when unset or empty.
	VisibleDevices []DeviceRef
	// DeviceOrdinals is GPU_DEVICE_ORDINAL, the same list for OpenCL.
	DeviceOrdinals []DeviceRef
}

// LocalTasks is the number of tasks of the step on this node, or 0 when
// unknown.
func (t Task) LocalTasks() int {
	if t.NodeID >= 0 && t.NodeID < len(t.TasksPerNode) {
		return t.TasksPerNode[t.NodeID]
	}
	return 0
}

// TaskFromEnv reads the task from its environment through getenv.
// SLURM_PROCID and SLURM_LOCALID are required; a malformed value, or ids
// that do not fit the counts given (SLURM_LOCALID beyond this node's task
// count, SLURM_PROCID beyond SLURM_NTASKS), is an *EnvError naming the
// variable and value.
func TaskFromEnv(getenv func(string) string) (Task, error) {
	e := envReader{getenv: getenv}
	var t Task
	for _, v := range []string{"SLURM_PROCID", "SLURM_LOCALID"} {
		if getenv(v) == "" {
			return Task{}, &EnvError{Var: v, Unset: true, Msg: "not a Slurm task (run it under srun)"}
		}
	}
	t.ProcID = e.intVar("SLURM_PROCID", 0, "not a task rank")
	t.LocalID = e.intVar("SLURM_LOCALID", 0, "not a local task id")
	t.NodeID = e.intVar("SLURM_NODEID", 0, "not a node index")
	t.NTasks = e.intVar("SLURM_NTASKS", 0, "not a task count")
	t.GPUsOnNode = e.intVar("SLURM_GPUS_ON_NODE", 0, "not a GPU count")
	t.StepID = getenv("SLURM_STEP_ID")
	if v := getenv("SLURM_JOB_ID"); v != "" {
		id, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			e.fail("SLURM_JOB_ID", v, "not a job id")
		}
		t.JobID = id
	}
	tpnVar := "SLURM_STEP_TASKS_PER_NODE"
	tpn := getenv(tpnVar)
	if tpn == "" {
		tpnVar = "SLURM_TASKS_PER_NODE"
		tpn = getenv(tpnVar)
	}
	if tpn != "" {
		l, err := ParseCountList(tpn)
		if err != nil {
			e.fail(tpnVar, tpn, "not a task count list like 2(x3),1")
		}
		t.TasksPerNode = l
	}
	if v := getenv("SLURM_STEP_GPUS"); v != "" {
		l, err := ParseIndexList(v)
		if err != nil {
			e.fail("SLURM_STEP_GPUS", v, "not a GPU index list")
		}
		t.StepGPUs = l
	}
	t.VisibleDevices = e.deviceList("CUDA_VISIBLE_DEVICES")
	t.DeviceOrdinals = e.deviceList("GPU_DEVICE_ORDINAL")
	if e.err != nil {
		return Task{}, e.err
	}
	if t.NTasks > 0 && t.ProcID >= t.NTasks {
		return Task{}, &EnvError{Var: "SLURM_PROCID", Value: getenv("SLURM_PROCID"),
			Msg: fmt.Sprintf("not below SLURM_NTASKS=%d", t.NTasks)}
	}
	if t.TasksPerNode != nil {
		if t.NodeID >= len(t.TasksPerNode) {
			return Task{}, &EnvError{Var: "SLURM_NODEID", Value: getenv("SLURM_NODEID"),
				Msg: fmt.Sprintf("beyond the %s of %s=%s", plural.Count(len(t.TasksPerNode), "node", "nodes"), tpnVar, quote(tpn))}
		}
		if n := t.TasksPerNode[t.NodeID]; t.LocalID >= n {
			return Task{}, &EnvError{Var: "SLURM_LOCALID", Value: getenv("SLURM_LOCALID"),
				Msg: fmt.Sprintf("not below this node's %s (%s=%s)", plural.Count(n, "task", "tasks"), tpnVar, quote(tpn))}
		}
	}
	return t, nil
}
