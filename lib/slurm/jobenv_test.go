package slurm

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// prologEnv is what slurmd 22.05 gave a prolog for `sbatch -C tuned
// --comment profile=bench --gres=gpu:2` (see slurm-facts.md).
func prologEnv() map[string]string {
	return map[string]string{
		"SLURM_JOB_ID":            "4242",
		"SLURM_JOBID":             "4242",
		"SLURM_JOB_USER":          "alice",
		"SLURM_JOB_UID":           "1001",
		"SLURM_JOB_GID":           "1001",
		"SLURM_JOB_PARTITION":     "gpu",
		"SLURM_JOB_NUM_NODES":     "2",
		"SLURM_JOB_CPUS_PER_NODE": "112(x2)",
		"SLURM_NODELIST":          "dgx[001-002]",
		"SLURMD_NODENAME":         "dgx001",
		"SLURM_CLUSTER_NAME":      "sprout",
		"SLURM_CONF":              "/etc/slurm/slurm.conf",
		"SLURM_JOB_CONSTRAINTS":   "tuned",
		"SLURM_JOB_COMMENT":       "profile=bench",
		"SLURM_JOB_GPUS":          "0,1",
		"CUDA_VISIBLE_DEVICES":    "0,1",
		"GPU_DEVICE_ORDINAL":      "0,1",
		"SLURM_SCRIPT_CONTEXT":    "prolog_slurmd",
	}
}

func TestJobFromEnvProlog(t *testing.T) {
	j, err := JobFromEnv(envOf(prologEnv()))
	if err != nil {
		t.Fatal(err)
	}
	want := Job{
		ID: 4242, User: "alice", UID: 1001, GID: 1001, Partition: "gpu", Cluster: "sprout",
		NodeName: "dgx001", NodeList: "dgx[001-002]", NumNodes: 2, CPUsPerNode: []int{112, 112},
		GPUs: []int{0, 1}, VisibleDevices: []DeviceRef{{Index: 0}, {Index: 1}},
		Constraints: "tuned", Comment: "profile=bench", Context: ContextPrologSlurmd,
		Conf: "/etc/slurm/slurm.conf",
	}
	if !reflect.DeepEqual(j, want) {
		t.Errorf("got  %+v\nwant %+v", j, want)
	}
	if j.IsEpilog() {
		t.Error("IsEpilog in a prolog")
	}
	if nodes, err := j.Nodes(); err != nil || !reflect.DeepEqual(nodes, []string{"dgx001", "dgx002"}) {
		t.Errorf("Nodes() = %q, %v", nodes, err)
	}
}

func TestJobFromEnvEpilog(t *testing.T) {
	env := prologEnv()
	env["SLURM_SCRIPT_CONTEXT"] = "epilog_slurmd"
	env["SLURM_JOB_EXIT_CODE"] = "768"
	env["SLURM_JOB_EXIT_CODE2"] = "3:0"
	env["SLURM_JOB_DERIVED_EC"] = "256"
	j, err := JobFromEnv(envOf(env))
	if err != nil {
		t.Fatal(err)
	}
	if !j.IsEpilog() {
		t.Error("not an epilog")
	}
	want := &ExitStatus{Raw: 768, Code: 3, Signal: 0, Derived: 256, DerivedSet: true}
	if !reflect.DeepEqual(j.Exit, want) {
		t.Errorf("Exit = %+v, want %+v", j.Exit, want)
	}
	// Killed by SIGKILL, no EXIT_CODE2: decoded from the wait status.
	delete(env, "SLURM_JOB_EXIT_CODE2")
	delete(env, "SLURM_JOB_DERIVED_EC")
	env["SLURM_JOB_EXIT_CODE"] = "9"
	j, err = JobFromEnv(envOf(env))
	if err != nil || j.Exit == nil || j.Exit.Signal != 9 || j.Exit.Code != 0 || j.Exit.DerivedSet {
		t.Errorf("signalled: %+v, %v", j.Exit, err)
	}
}

func TestJobFromEnvMinimal(t *testing.T) {
	j, err := JobFromEnv(envOf(map[string]string{"SLURM_JOB_ID": "7"}))
	if err != nil {
		t.Fatal(err)
	}
	if j.ID != 7 || j.UID != -1 || j.GID != -1 || j.GPUs != nil || j.VisibleDevices != nil || j.Exit != nil || j.CPUsPerNode != nil {
		t.Errorf("minimal: %+v", j)
	}
}

func TestJobFromEnvGPUForms(t *testing.T) {
	for in, want := range map[string][]int{
		"0": {0}, "0,1": {0, 1}, "0-3": {0, 1, 2, 3}, "0-1,4,6-7": {0, 1, 4, 6, 7}, " 2 , 5 ": {2, 5},
	} {
		env := map[string]string{"SLURM_JOB_ID": "1", "SLURM_JOB_GPUS": in}
		j, err := JobFromEnv(envOf(env))
		if err != nil || !reflect.DeepEqual(j.GPUs, want) {
			t.Errorf("SLURM_JOB_GPUS=%q: %v, %v; want %v", in, j.GPUs, err, want)
		}
	}
	env := map[string]string{"SLURM_JOB_ID": "1", "CUDA_VISIBLE_DEVICES": "MIG-5f1a2b3c-0000-1111-2222-333344445555,MIG-GPU-8c2e/1/0"}
	j, err := JobFromEnv(envOf(env))
	if err != nil || len(j.VisibleDevices) != 2 || !j.VisibleDevices[0].IsMIG() || j.VisibleDevices[1].Index != -1 {
		t.Errorf("MIG UUIDs: %+v, %v", j.VisibleDevices, err)
	}
}

// Slurm 26.05 gives the job's SLUID (seen in a Debian sid VM's prolog).
func TestJobFromEnvSLUID(t *testing.T) {
	j, err := JobFromEnv(envOf(map[string]string{"SLURM_JOB_ID": "1", "SLURM_JOB_SLUID": "s6ksm8tx3wzg00"}))
	if err != nil || j.SLUID != "s6KSM8TX3WZG00" {
		t.Errorf("SLUID = %q, %v; want s6KSM8TX3WZG00", j.SLUID, err)
	}
	if j, _ := JobFromEnv(envOf(map[string]string{"SLURM_JOB_ID": "1"})); j.SLUID != "" {
		t.Errorf("SLUID = %q without SLURM_JOB_SLUID (Slurm before 26.05), want empty", j.SLUID)
	}
}

func TestJobFromEnvBad(t *testing.T) {
	tests := []struct {
		set  map[string]string
		want string
	}{
		{map[string]string{"SLURM_JOB_ID": ""}, "SLURM_JOB_ID is not set"},
		{map[string]string{"SLURM_JOB_ID": "12a"}, `SLURM_JOB_ID="12a": not a job id`},
		{map[string]string{"SLURM_JOB_ID": "0"}, `SLURM_JOB_ID="0": not a job id`},
		{map[string]string{"SLURM_JOB_GPUS": "0,x"}, `SLURM_JOB_GPUS="0,x": not a GPU index list`},
		{map[string]string{"SLURM_JOB_GPUS": "3-1"}, `SLURM_JOB_GPUS="3-1": not a GPU index list`},
		{map[string]string{"SLURM_JOB_GPUS": "0-99999999"}, `SLURM_JOB_GPUS="0-99999999": not a GPU index list`},
		{map[string]string{"SLURM_JOB_GPUS": "0\n,x"}, `SLURM_JOB_GPUS="0\n,x": not a GPU index list`},
		{map[string]string{"SLURM_JOB_UID": "-5"}, `SLURM_JOB_UID="-5": not a uid`},
		{map[string]string{"SLURM_JOB_GID": "root"}, `SLURM_JOB_GID="root": not a gid`},
		{map[string]string{"SLURM_JOB_NUM_NODES": "two"}, `SLURM_JOB_NUM_NODES="two": not a node count`},
		{map[string]string{"SLURM_JOB_CPUS_PER_NODE": "72(x"}, `SLURM_JOB_CPUS_PER_NODE="72(x": not a CPU count list like 72(x2),36`},
		{map[string]string{"CUDA_VISIBLE_DEVICES": "0,gpu1"}, `CUDA_VISIBLE_DEVICES="0,gpu1": "gpu1" is neither an index nor a GPU-/MIG- UUID`},
		{map[string]string{"SLURM_JOB_SLUID": "../../etc"}, `SLURM_JOB_SLUID="../../etc": not a SLUID (s and 13 base-32 digits)`},
		{map[string]string{"SLURM_JOB_EXIT_CODE": "-1"}, `SLURM_JOB_EXIT_CODE="-1": not a wait status`},
		{map[string]string{"SLURM_JOB_EXIT_CODE": "0", "SLURM_JOB_EXIT_CODE2": "3"}, `SLURM_JOB_EXIT_CODE2="3": not code:signal`},
		{map[string]string{"SLURM_JOB_EXIT_CODE": "0", "SLURM_JOB_DERIVED_EC": "x"}, `SLURM_JOB_DERIVED_EC="x": not a wait status`},
	}
	for _, tt := range tests {
		env := map[string]string{"SLURM_JOB_ID": "99"}
		for k, v := range tt.set {
			env[k] = v
		}
		_, err := JobFromEnv(envOf(env))
		if err == nil || err.Error() != tt.want {
			t.Errorf("%v: got %v, want %s", tt.set, err, tt.want)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("multi-line error %q", err)
		}
		var ee *EnvError
		if !errors.As(err, &ee) {
			t.Errorf("%v is not an *EnvError", err)
		}
	}
}

func TestJobFromEnvFreeTextNeverFails(t *testing.T) {
	env := prologEnv()
	env["SLURM_JOB_COMMENT"] = "profile=\x00weird\n\"text\""
	env["SLURM_JOB_CONSTRAINTS"] = "[a*2&b]|c"
	if _, err := JobFromEnv(envOf(env)); err != nil {
		t.Errorf("free text failed: %v", err)
	}
}

func TestParseCountList(t *testing.T) {
	for in, want := range map[string][]int{
		"1": {1}, "2(x3),1": {2, 2, 2, 1}, "72(x2)": {72, 72}, "4,4,2": {4, 4, 2}, "0(x2)": {0, 0},
	} {
		got, err := ParseCountList(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ParseCountList(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "2(x)", "2(3)", "2(x0)", "2(x3", "(x3)", "2(x3),", "-1", "1(x4000000000)", "1(x2000000)"} {
		if got, err := ParseCountList(bad); err == nil {
			t.Errorf("ParseCountList(%q) = %v, want an error", bad, got)
		}
	}
}

func TestErrorText(t *testing.T) {
	long := strings.Repeat("7,", 100)
	err := (&EnvError{Var: "SLURM_JOB_GPUS", Value: long, Msg: "bad"}).Error()
	if want := `SLURM_JOB_GPUS="` + long[:64] + `"...: bad`; err != want {
		t.Errorf("clipped: %q", err)
	}
}

// TestJobFromEnvMPS: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE says a job asked
// for --gres=mps:25; where SLURM_JOB_GPUS is absent its GPU is
// CUDA_VISIBLE_DEVICES (Slurm 22.05 sets both: test/e2e
// TestSlurmGresMPSPrologEnv).
func TestJobFromEnvMPS(t *testing.T) {
	env := prologEnv()
	delete(env, "SLURM_JOB_GPUS")
	delete(env, "GPU_DEVICE_ORDINAL")
	env["CUDA_VISIBLE_DEVICES"] = "3"
	env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = "25"
	j, err := JobFromEnv(envOf(env))
	if err != nil || !j.MPS || j.MPSPercent != 25 || !reflect.DeepEqual(j.GPUs, []int{3}) {
		t.Errorf("MPS job: GPUs %v, MPSPercent %d, %v", j.GPUs, j.MPSPercent, err)
	}
	// A gres/gpu job keeps SLURM_JOB_GPUS and did not ask for MPS.
	if j, _ := JobFromEnv(envOf(prologEnv())); j.MPS || !reflect.DeepEqual(j.GPUs, []int{0, 1}) {
		t.Errorf("GPU job: GPUs %v, MPSPercent %d", j.GPUs, j.MPSPercent)
	}
	for _, bad := range []string{"x", "-5", "101"} {
		env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = bad
		if _, err := JobFromEnv(envOf(env)); err == nil || !strings.Contains(err.Error(), "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
