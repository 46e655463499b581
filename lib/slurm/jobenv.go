package slurm

import (
	"strconv"
	"strings"
)

// Script contexts, SLURM_SCRIPT_CONTEXT as slurmd and slurmctld set it.
const (
	ContextPrologSlurmd    = "prolog_slurmd"
	ContextEpilogSlurmd    = "epilog_slurmd"
	ContextPrologSlurmctld = "prolog_slurmctld"
	ContextEpilogSlurmctld = "epilog_slurmctld"
)

// Job is what a Prolog or Epilog learns of its job from slurmd's
// environment (Slurm 22.05; see ../shared/notes/slurm-facts.md). slurmd
// passes no PATH and no HOME.
type Job struct {
	ID uint64 // SLURM_JOB_ID (required)
	// SLUID is SLURM_JOB_SLUID (Slurm 26.05 and later, sluid.go), in
	// Slurm's form; "" when unset.
	SLUID     string
	User      string // SLURM_JOB_USER
	UID, GID  int    // SLURM_JOB_UID, SLURM_JOB_GID; -1 when unset
	Partition string // SLURM_JOB_PARTITION
	Cluster   string // SLURM_CLUSTER_NAME
	NodeName  string // SLURMD_NODENAME: the node this hook runs on
	// NodeList is SLURM_NODELIST, a hostlist expression; Nodes expands it.
	NodeList string
	NumNodes int // SLURM_JOB_NUM_NODES; 0 when unset
	// CPUsPerNode is SLURM_JOB_CPUS_PER_NODE expanded ("72(x2)" is 72,72);
	// nil when unset.
	CPUsPerNode []int
	// GPUs is SLURM_JOB_GPUS: the job's GPU indices on this node (Slurm's
	// gres index, PCI bus order); nil when the job has no GPUs here.
	GPUs []int
	// VisibleDevices is CUDA_VISIBLE_DEVICES as the prolog sees it (the
	// same GPUs as indices, or MIG/GPU UUIDs); nil when unset or empty.
	VisibleDevices []DeviceRef
	// MPS says the job asked for --gres=mps:N: Slurm's gres/mps plugin
	// set CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, the job's share of the GPU
	// (MPSPercent, 0..100; 25 for mps:25 with Count=100). Slurm 22.05
	// also sets SLURM_JOB_GPUS and CUDA_VISIBLE_DEVICES to that GPU's gres
	// index, GPU_DEVICE_ORDINAL unset (measured: test/e2e
	// TestSlurmGresMPSPrologEnv). Where SLURM_JOB_GPUS is absent, GPUs is
	// taken from CUDA_VISIBLE_DEVICES (Slurm's own prolog example reads
	// it so).
	MPS         bool
	MPSPercent  int
	Constraints string // SLURM_JOB_CONSTRAINTS (only with -C)
	Comment     string // SLURM_JOB_COMMENT (only with --comment)
	Context     string // SLURM_SCRIPT_CONTEXT: prolog_slurmd, epilog_slurmd, ...
	Conf        string // SLURM_CONF
	// Exit is the job's end state, set in an epilog only.
	Exit *ExitStatus
}

// ExitStatus is what an epilog learns of how the job ended.
type ExitStatus struct {
	// Raw is SLURM_JOB_EXIT_CODE: the batch script's wait status.
	Raw uint32
	// Code and Signal are SLURM_JOB_EXIT_CODE2 ("code:signal"), or decoded
	// from Raw when that is unset.
	Code, Signal int
	// Derived is SLURM_JOB_DERIVED_EC: the highest wait status of any step;
	// DerivedSet says it was given.
	Derived    uint32
	DerivedSet bool
}

// IsEpilog says whether the hook is an epilog (SLURM_SCRIPT_CONTEXT).
func (j Job) IsEpilog() bool { return strings.HasPrefix(j.Context, "epilog") }

// Nodes expands NodeList (SLURM_NODELIST).
func (j Job) Nodes() ([]string, error) {
	if j.NodeList == "" {
		return nil, nil
	}
	return ExpandHostlist(j.NodeList)
}

// JobFromEnv reads the job from a Prolog/Epilog environment through getenv
// (os.Getenv, or a map lookup in tests). SLURM_JOB_ID is required; a
// malformed value is an *EnvError naming the variable and value. Free text
// (SLURM_JOB_COMMENT, SLURM_JOB_CONSTRAINTS) is never an error.
func JobFromEnv(getenv func(string) string) (Job, error) {
	e := envReader{getenv: getenv}
	j := Job{UID: -1, GID: -1}
	idStr := getenv("SLURM_JOB_ID")
	if idStr == "" {
		return Job{}, &EnvError{Var: "SLURM_JOB_ID", Unset: true}
	}
	id, err := strconv.ParseUint(idStr, 10, 64)
	if err != nil || id == 0 {
		return Job{}, &EnvError{Var: "SLURM_JOB_ID", Value: idStr, Msg: "not a job id"}
	}
	j.ID = id
	if v := getenv("SLURM_JOB_SLUID"); v != "" {
		if sl, ok := ParseSLUID(v); ok {
			j.SLUID = sl
		} else {
			e.fail("SLURM_JOB_SLUID", v, "not a SLUID (s and 13 base-32 digits)")
		}
	}
	j.User = getenv("SLURM_JOB_USER")
	j.Partition = getenv("SLURM_JOB_PARTITION")
	j.Cluster = getenv("SLURM_CLUSTER_NAME")
	j.NodeName = getenv("SLURMD_NODENAME")
	j.NodeList = getenv("SLURM_NODELIST")
	j.Constraints = getenv("SLURM_JOB_CONSTRAINTS")
	j.Comment = getenv("SLURM_JOB_COMMENT")
	j.Context = getenv("SLURM_SCRIPT_CONTEXT")
	j.Conf = getenv("SLURM_CONF")
	j.UID = e.intVar("SLURM_JOB_UID", -1, "not a uid")
	j.GID = e.intVar("SLURM_JOB_GID", -1, "not a gid")
	j.NumNodes = e.intVar("SLURM_JOB_NUM_NODES", 0, "not a node count")
	if v := getenv("SLURM_JOB_CPUS_PER_NODE"); v != "" {
		if j.CPUsPerNode, err = ParseCountList(v); err != nil {
			e.fail("SLURM_JOB_CPUS_PER_NODE", v, "not a CPU count list like 72(x2),36")
		}
	}
	if v := getenv("SLURM_JOB_GPUS"); v != "" {
		if j.GPUs, err = ParseIndexList(v); err != nil {
			e.fail("SLURM_JOB_GPUS", v, "not a GPU index list")
		}
	}
	j.VisibleDevices = e.deviceList("CUDA_VISIBLE_DEVICES")
	if v := getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"); v != "" {
		j.MPS = true
		j.MPSPercent = e.intVar("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", 0, "not a percentage")
		if j.MPSPercent > 100 {
			e.fail("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", v, "not a percentage 0..100")
		}
		if len(j.GPUs) == 0 {
			for _, d := range j.VisibleDevices {
				if d.UUID != "" {
					j.GPUs = nil // UUIDs: jobGPUs cannot tell; GPU knobs are skipped with a warning
					break
				}
				j.GPUs = append(j.GPUs, d.Index)
			}
		}
	}
	if v := getenv("SLURM_JOB_EXIT_CODE"); v != "" {
		j.Exit = e.exitStatus(v)
	}
	if e.err != nil {
		return Job{}, e.err
	}
	return j, nil
}

func (e *envReader) exitStatus(raw string) *ExitStatus {
	r, err := strconv.ParseUint(raw, 10, 32)
	if err != nil {
		e.fail("SLURM_JOB_EXIT_CODE", raw, "not a wait status")
		return nil
	}
	x := &ExitStatus{Raw: uint32(r)}
	// Decode as WEXITSTATUS / WTERMSIG do on Linux.
	if sig := int(r & 0x7f); sig == 0 {
		x.Code = int(r>>8) & 0xff
	} else if sig != 0x7f {
		x.Signal = sig
	}
	if v := e.getenv("SLURM_JOB_EXIT_CODE2"); v != "" {
		c, s, ok := strings.Cut(v, ":")
		code, err1 := strconv.Atoi(c)
		sig, err2 := strconv.Atoi(s)
		if !ok || err1 != nil || err2 != nil || code < 0 || sig < 0 {
			e.fail("SLURM_JOB_EXIT_CODE2", v, "not code:signal")
		} else {
			x.Code, x.Signal = code, sig
		}
	}
	if v := e.getenv("SLURM_JOB_DERIVED_EC"); v != "" {
		d, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			e.fail("SLURM_JOB_DERIVED_EC", v, "not a wait status")
		} else {
			x.Derived, x.DerivedSet = uint32(d), true
		}
	}
	return x
}

// envReader reads variables through getenv and keeps the first error.
type envReader struct {
	getenv func(string) string
	err    error
}

func (e *envReader) fail(name, value, msg string) {
	if e.err == nil {
		e.err = &EnvError{Var: name, Value: value, Msg: msg}
	}
}

// deviceList reads CUDA_VISIBLE_DEVICES or GPU_DEVICE_ORDINAL; nil when
// unset or empty (Slurm unsets them rather than leaving them empty).
func (e *envReader) deviceList(name string) []DeviceRef {
	v := e.getenv(name)
	if strings.TrimSpace(v) == "" {
		return nil
	}
	l, err := ParseDeviceList(v)
	if err != nil {
		e.fail(name, v, err.Error())
	}
	return l
}

// intVar reads a non-negative integer variable, def when unset.
func (e *envReader) intVar(name string, def int, msg string) int {
	v := e.getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		e.fail(name, v, msg)
		return def
	}
	return n
}
