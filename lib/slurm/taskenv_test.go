package slurm

import (
	"reflect"
	"strings"
	"testing"
)

// taskEnv is what rank 5 of `srun -N2 -n8 --gres=gpu:4` sees on node 1.
func taskEnv() map[string]string {
	return map[string]string{
		"SLURM_JOB_ID":              "4242",
		"SLURM_STEP_ID":             "0",
		"SLURM_PROCID":              "5",
		"SLURM_LOCALID":             "1",
		"SLURM_NODEID":              "1",
		"SLURM_NTASKS":              "8",
		"SLURM_STEP_TASKS_PER_NODE": "4(x2)",
		"SLURM_TASKS_PER_NODE":      "4(x2)",
		"SLURM_STEP_GPUS":           "0,1,2,3",
		"SLURM_GPUS_ON_NODE":        "4",
		"CUDA_VISIBLE_DEVICES":      "0,1,2,3",
		"GPU_DEVICE_ORDINAL":        "0,1,2,3",
	}
}

func TestTaskFromEnv(t *testing.T) {
	tk, err := TaskFromEnv(envOf(taskEnv()))
	if err != nil {
		t.Fatal(err)
	}
	four := []DeviceRef{{Index: 0}, {Index: 1}, {Index: 2}, {Index: 3}}
	want := Task{JobID: 4242, StepID: "0", ProcID: 5, LocalID: 1, NodeID: 1, NTasks: 8,
		NodeTasks: 4, StepNodes: 2, StepGPUs: []int{0, 1, 2, 3}, GPUsOnNode: 4,
		VisibleDevices: four, DeviceOrdinals: four}
	if !reflect.DeepEqual(tk, want) {
		t.Errorf("got  %+v\nwant %+v", tk, want)
	}
	if tk.LocalTasks() != 4 {
		t.Errorf("LocalTasks = %d", tk.LocalTasks())
	}
}

func TestTaskFromEnvForms(t *testing.T) {
	// Uneven layout from SLURM_TASKS_PER_NODE when the step variable is
	// absent; UUIDs in CUDA_VISIBLE_DEVICES as newer Slurm and MIG give.
	env := map[string]string{
		"SLURM_PROCID": "6", "SLURM_LOCALID": "0", "SLURM_NODEID": "3", "SLURM_NTASKS": "7",
		"SLURM_TASKS_PER_NODE": "2(x3),1",
		"CUDA_VISIBLE_DEVICES": "GPU-8c2e0f3a-1111-2222-3333-444455556666, MIG-5f1a2b3c-0000-1111-2222-333344445555",
	}
	tk, err := TaskFromEnv(envOf(env))
	if err != nil {
		t.Fatal(err)
	}
	if tk.StepNodes != 4 || tk.LocalTasks() != 1 {
		t.Errorf("step nodes %d, local %d", tk.StepNodes, tk.LocalTasks())
	}
	want := []DeviceRef{{Index: -1, UUID: "GPU-8c2e0f3a-1111-2222-3333-444455556666"}, {Index: -1, UUID: "MIG-5f1a2b3c-0000-1111-2222-333344445555"}}
	if !reflect.DeepEqual(tk.VisibleDevices, want) || tk.VisibleDevices[0].IsMIG() || !tk.VisibleDevices[1].IsMIG() {
		t.Errorf("visible %+v", tk.VisibleDevices)
	}
	if tk.StepGPUs != nil || tk.DeviceOrdinals != nil || tk.JobID != 0 {
		t.Errorf("unset variables gave values: %+v", tk)
	}
	if s := tk.VisibleDevices[0].String(); s != want[0].UUID {
		t.Errorf("String() = %q", s)
	}
}

func TestTaskFromEnvBad(t *testing.T) {
	tests := []struct {
		set  map[string]string
		want string
	}{
		{map[string]string{"SLURM_PROCID": ""}, "SLURM_PROCID is not set: not a Slurm task (run it under srun)"},
		{map[string]string{"SLURM_LOCALID": ""}, "SLURM_LOCALID is not set: not a Slurm task (run it under srun)"},
		{map[string]string{"SLURM_PROCID": "x"}, `SLURM_PROCID="x": not a task rank`},
		{map[string]string{"SLURM_LOCALID": "-1"}, `SLURM_LOCALID="-1": not a local task id`},
		{map[string]string{"SLURM_NODEID": "1.5"}, `SLURM_NODEID="1.5": not a node index`},
		{map[string]string{"SLURM_STEP_TASKS_PER_NODE": "4(x2"}, `SLURM_STEP_TASKS_PER_NODE="4(x2": not a task count list like 2(x3),1`},
		{map[string]string{"SLURM_STEP_GPUS": "0,,1"}, `SLURM_STEP_GPUS="0,,1": not a GPU index list`},
		{map[string]string{"CUDA_VISIBLE_DEVICES": "0,NoDevFiles"}, `CUDA_VISIBLE_DEVICES="0,NoDevFiles": "NoDevFiles" is neither an index nor a GPU-/MIG- UUID`},
		{map[string]string{"GPU_DEVICE_ORDINAL": "GPU-"}, `GPU_DEVICE_ORDINAL="GPU-": "GPU-" is not a device UUID`},
		{map[string]string{"SLURM_PROCID": "8"}, `SLURM_PROCID="8": not below SLURM_NTASKS=8`},
		{map[string]string{"SLURM_LOCALID": "4"}, `SLURM_LOCALID="4": not below this node's 4 tasks (SLURM_STEP_TASKS_PER_NODE="4(x2)")`},
		{map[string]string{"SLURM_NODEID": "2"}, `SLURM_NODEID="2": beyond the 2 nodes of SLURM_STEP_TASKS_PER_NODE="4(x2)"`},
		{map[string]string{"SLURM_JOB_ID": "j1"}, `SLURM_JOB_ID="j1": not a job id`},
		{map[string]string{"SLURM_STEP_TASKS_PER_NODE": "4,"}, `SLURM_STEP_TASKS_PER_NODE="4,": not a task count list like 2(x3),1`},
		{map[string]string{"SLURM_STEP_TASKS_PER_NODE": "4(x0)"}, `SLURM_STEP_TASKS_PER_NODE="4(x0)": not a task count list like 2(x3),1`},
		// Past what Slurm allows on a node (MaxTasksPerNode <= 65533).
		{map[string]string{"SLURM_STEP_TASKS_PER_NODE": "4,100000000"}, `SLURM_STEP_TASKS_PER_NODE="4,100000000": 100000000 tasks on node 1, more than Slurm runs on one node (MaxTasksPerNode is at most 65533)`},
		{map[string]string{"SLURM_STEP_TASKS_PER_NODE": "4,65534"}, `SLURM_STEP_TASKS_PER_NODE="4,65534": 65534 tasks on node 1, more than Slurm runs on one node (MaxTasksPerNode is at most 65533)`},
		{map[string]string{"SLURM_STEP_TASKS_PER_NODE": "", "SLURM_TASKS_PER_NODE": "", "SLURM_LOCALID": "3000000"}, `SLURM_LOCALID="3000000": not below 65533, the most tasks Slurm runs on one node (MaxTasksPerNode)`},
	}
	for _, tt := range tests {
		env := taskEnv()
		for k, v := range tt.set {
			env[k] = v
		}
		_, err := TaskFromEnv(envOf(env))
		if err == nil || err.Error() != tt.want {
			t.Errorf("%v: got %v, want %s", tt.set, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("multi-line error %q", err)
		}
	}
}

// Slurm's largest legal count is read as it is, and the compressed list is
// read without expanding it: a step over 100000000 nodes, or a node with
// the most tasks Slurm allows, costs what the variable's text costs.
func TestTaskCountsNotExpanded(t *testing.T) {
	env := taskEnv()
	env["SLURM_NTASKS"] = ""
	env["SLURM_LOCALID"] = "65532"
	env["SLURM_STEP_TASKS_PER_NODE"] = "1,65533"
	tk, err := TaskFromEnv(envOf(env))
	if err != nil || tk.LocalTasks() != MaxTasksPerNode || tk.StepNodes != 2 {
		t.Fatalf("the largest legal count: %+v, %v", tk, err)
	}
	env["SLURM_LOCALID"] = "1"
	for _, c := range []struct {
		tpn          string
		nodeID       string
		local, nodes int
	}{
		{"2(x100000000)", "99999999", 2, 100000000},
		{"3,2(x100000000),5", "100000001", 5, 100000002},
		{"3,2(x100000000),5", "0", 3, 100000002},
		{"3(x999999999),2(x999999999)", "1000000000", 2, 1999999998},
	} {
		env["SLURM_STEP_TASKS_PER_NODE"], env["SLURM_NODEID"] = c.tpn, c.nodeID
		var tk Task
		var err error
		allocs := testing.AllocsPerRun(3, func() { tk, err = TaskFromEnv(envOf(env)) })
		if err != nil || tk.LocalTasks() != c.local || tk.StepNodes != c.nodes {
			t.Errorf("%s on node %s: %d tasks of %d nodes, %v; want %d of %d", c.tpn, c.nodeID, tk.LocalTasks(), tk.StepNodes, err, c.local, c.nodes)
		}
		// The device lists allocate a few entries; a node list of
		// 10^8 entries would be millions of allocations.
		if allocs > 20 {
			t.Errorf("%s: %v allocations", c.tpn, allocs)
		}
	}
}

func TestParseDeviceList(t *testing.T) {
	got, err := ParseDeviceList("")
	if err != nil || got == nil || len(got) != 0 {
		t.Errorf(`ParseDeviceList("") = %#v, %v`, got, err)
	}
	got, err = ParseDeviceList("3, 1,GPU-abc")
	if err != nil || !reflect.DeepEqual(got, []DeviceRef{{Index: 3}, {Index: 1}, {Index: -1, UUID: "GPU-abc"}}) {
		t.Errorf("mixed: %+v, %v", got, err)
	}
	for _, bad := range []string{"-1", "0,", "a", "99999999", "MIG-", "GPU-a b"} {
		if _, err := ParseDeviceList(bad); err == nil {
			t.Errorf("ParseDeviceList(%q) accepted", bad)
		}
	}
}

// FuzzEnvLists: the list parsers behind JobFromEnv and TaskFromEnv never
// panic and their errors are one line.
func FuzzEnvLists(f *testing.F) {
	for _, s := range []string{"0,1", "0-3,6", "2(x3),1", "72(x2)", "GPU-abc,MIG-x", "1(x4000000000)", "0-99999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		env := map[string]string{
			"SLURM_JOB_ID": "1", "SLURM_JOB_GPUS": s, "SLURM_JOB_CPUS_PER_NODE": s,
			"SLURM_PROCID": "0", "SLURM_LOCALID": "0", "SLURM_STEP_TASKS_PER_NODE": s,
			"CUDA_VISIBLE_DEVICES": s, "SLURM_STEP_GPUS": s, "SLURM_JOB_EXIT_CODE": s,
		}
		for _, err := range []error{
			func() error { _, err := JobFromEnv(envOf(env)); return err }(),
			func() error { _, err := TaskFromEnv(envOf(env)); return err }(),
		} {
			if err != nil && strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("multi-line error %q", err)
			}
		}
	})
}
