package slurm

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"gpuprep/lib/plural"
)

// MaxTasksPerNode bounds the tasks of a step on one node that a task
// believes in (SLURM_STEP_TASKS_PER_NODE, SLURM_TASKS_PER_NODE,
// SLURM_LOCALID). It is the largest MaxTasksPerNode slurm.conf accepts
// ("May not exceed 65533", slurm.conf(5) of Slurm 22.05; the default is
// 512), not the node's own setting: a task cannot count on reading
// slurm.conf, and with overcommit (-O) Slurm runs more tasks than CPUs, so
// no smaller bound is safe from refusing a legal step. A count beyond it
// is not one Slurm made, and TaskFromEnv refuses it.
const MaxTasksPerNode = 65533

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
	// NodeTasks is this node's entry (SLURM_NODEID's) of
	// SLURM_STEP_TASKS_PER_NODE, else SLURM_TASKS_PER_NODE ("2(x3),1" is
	// 2 on nodes 0-2 and 1 on node 3), at most MaxTasksPerNode; 0 when
	// neither is set.
	NodeTasks int
	// StepNodes is how many nodes that list covers (4 for "2(x3),1"); 0
	// when neither is set. The list is never expanded: "2(x100000000)"
	// costs what its text costs.
	StepNodes int
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
func (t Task) LocalTasks() int { return t.NodeTasks }

// TaskFromEnv reads the task from its environment through getenv.
// SLURM_PROCID and SLURM_LOCALID are required; a malformed value, or ids
// that do not fit the counts given (SLURM_LOCALID beyond this node's task
// count, SLURM_PROCID beyond SLURM_NTASKS), is an *EnvError naming the
// variable and value; so is a node's task count over MaxTasksPerNode, or a
// SLURM_LOCALID at or over it. Its work and memory are those of the
// variables' text, whatever counts they hold.
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
		n, nodes, err := countAt(tpn, t.NodeID)
		if err != nil {
			e.fail(tpnVar, tpn, "not a task count list like 2(x3),1")
		}
		t.NodeTasks, t.StepNodes = n, nodes
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
	if tpn != "" {
		if t.NodeID >= t.StepNodes {
			return Task{}, &EnvError{Var: "SLURM_NODEID", Value: getenv("SLURM_NODEID"),
				Msg: fmt.Sprintf("beyond the %s of %s=%s", plural.Count(t.StepNodes, "node", "nodes"), tpnVar, Quote(tpn))}
		}
		if n := t.NodeTasks; n > MaxTasksPerNode {
			return Task{}, &EnvError{Var: tpnVar, Value: tpn,
				Msg: fmt.Sprintf("%d tasks on node %d, more than Slurm runs on one node (MaxTasksPerNode is at most %d)", n, t.NodeID, MaxTasksPerNode)}
		}
		if n := t.NodeTasks; t.LocalID >= n {
			return Task{}, &EnvError{Var: "SLURM_LOCALID", Value: getenv("SLURM_LOCALID"),
				Msg: fmt.Sprintf("not below this node's %s (%s=%s)", plural.Count(n, "task", "tasks"), tpnVar, Quote(tpn))}
		}
	}
	if t.LocalID >= MaxTasksPerNode {
		return Task{}, &EnvError{Var: "SLURM_LOCALID", Value: getenv("SLURM_LOCALID"),
			Msg: fmt.Sprintf("not below %d, the most tasks Slurm runs on one node (MaxTasksPerNode)", MaxTasksPerNode)}
	}
	return t, nil
}

// countAt reads Slurm's compressed per-node counts ("2(x3),1", as
// ParseCountList) without expanding them: the count of node idx (0 when
// the list is shorter) and how many nodes the list covers (saturating
// at the largest int). It allocates nothing per node.
func countAt(s string, idx int) (count, nodes int, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, 0, errors.New("empty")
	}
	for more := true; more; {
		var el string
		el, s, more = strings.Cut(s, ",")
		el = strings.TrimSpace(el)
		num, rep := el, "1"
		if i := strings.IndexByte(el, '('); i >= 0 {
			if !strings.HasSuffix(el, ")") || !strings.HasPrefix(el[i+1:], "x") {
				return 0, 0, fmt.Errorf("%s is not N or N(xR)", Quote(el))
			}
			num, rep = el[:i], el[i+2:len(el)-1]
		}
		n, err1 := parseCountNum(num)
		r, err2 := parseCountNum(rep)
		if err1 != nil || err2 != nil || r == 0 {
			return 0, 0, fmt.Errorf("%s is not N or N(xR)", Quote(el))
		}
		if idx >= nodes && idx-nodes < r {
			count = n
		}
		if nodes > int(^uint(0)>>1)-r {
			nodes = int(^uint(0) >> 1)
		} else {
			nodes += r
		}
	}
	return count, nodes, nil
}
