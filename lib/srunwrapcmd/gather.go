package srunwrapcmd

import (
	"errors"
	"fmt"

	"gpuprep/lib/srunconf"

	"gpuprep/lib/bind"
	"gpuprep/lib/cmdenv"
	"gpuprep/lib/cpuset"
	"gpuprep/lib/host"
	"gpuprep/lib/nccl"
	"gpuprep/lib/nodedesc"
	"gpuprep/lib/slurm"
	"gpuprep/lib/topo"
)

// inputs are what one run of srunwrap reads before it plans: the task's
// Slurm variables, the node, the configuration and the task's CPUs. A
// part that could not be read carries its error; the run goes on without
// it (the command then runs unbound).
type inputs struct {
	root host.Root

	task    slurm.Task
	taskErr error // not a Slurm task, or a malformed SLURM_* variable

	node    *topo.Node
	desc    *nodedesc.Description // nil when the node came from sysfs
	source  string                // where the node came from
	nodeErr error

	srunwrap srunconf.SrunwrapSection
	fabrics  []srunconf.NCCLFabric
	cfgFrom  string

	allowed, job cpuset.Set
	cpuErr       error

	nodeName, partition string

	uid int // this process's user: an MPS pipe directory must be theirs
}

// gather reads the inputs. The settings come from the node description
// (the prolog copies [srunwrap] and [nccl] into it, so a rank parses no
// TOML), else they are the built-in ones.
func gather(e cmdenv.Env, f flags, sys system) *inputs {
	in := &inputs{root: host.NewRoot(f.root)}
	in.task, in.taskErr = slurm.TaskFromEnv(e.Getenv)
	in.node, in.desc, in.source, in.nodeErr = nodedesc.ForTask(in.root)
	if in.desc != nil {
		in.srunwrap, in.fabrics = in.desc.Srunwrap, in.desc.NCCL.Fabrics
		in.cfgFrom = fmt.Sprintf("%s, copied from %s by the prolog", nodedesc.Path, in.desc.ConfigFile)
	} else {
		in.srunwrap = srunconf.Defaults()
		in.cfgFrom = "built-in settings (no node description from gpuprep-prolog)"
	}
	in.allowed, in.job, in.cpuErr = sys.taskCPUs(in.root)
	in.nodeName = e.Getenv("SLURMD_NODENAME")
	if in.nodeName == "" && in.node != nil {
		in.nodeName = in.node.Hostname
	}
	in.partition = e.Getenv("SLURM_JOB_PARTITION")
	in.uid = sys.uid()
	return in
}

// bindInput is the planner's input for this task; brief when the plans'
// From texts are not printed (only --explain prints them).
func (in *inputs) bindInput(brief bool) bind.Input {
	bi := bind.Input{Node: in.node, Task: in.task, Allowed: in.allowed, JobCPUs: in.job, Config: in.srunwrap, Brief: brief}
	if in.desc != nil {
		bi.SlurmGPUs = in.desc.SlurmGPUs
	}
	return bi
}

// ncclInput is lib/nccl's input for a rank given its plan.
func (in *inputs) ncclInput(p bind.Plan, getenv func(string) string) nccl.Input {
	return nccl.Input{
		Fabrics: in.fabrics, Node: in.nodeName, Partition: in.partition, Product: in.product(),
		HCAs: p.HCAs, HCAFrom: p.HCAFrom, Getenv: getenv,
	}
}

// product is the DMI product name, read only when a fabric selects on it.
func (in *inputs) product() string {
	for _, fb := range in.fabrics {
		if len(fb.Products) > 0 {
			return nccl.Product(in.root)
		}
	}
	return ""
}

// problems lists, one line each, the inputs that could not be read: the
// task's Slurm variables, the node, the task's CPUs. Each is clipped
// (srunconf.Clip): the errors are other packages' and may quote the
// user's values.
func (in *inputs) problems() []string {
	var out []string
	if in.taskErr != nil {
		out = append(out, in.taskProblem())
	}
	if in.nodeErr != nil {
		out = append(out, srunconf.Clip("node: "+in.nodeErr.Error(), msgMax))
	}
	if in.cpuErr != nil {
		out = append(out, srunconf.Clip("task CPUs: "+in.cpuErr.Error(), msgMax))
	}
	return out
}

// taskProblem is problems' line for taskErr.
func (in *inputs) taskProblem() string { return envProblem(in.taskErr) }

// envProblem is err (taskErr) on one line: a malformed variable with its
// value as srunwrap shows every value (srunconf.Show: clipped, with a
// count of what was cut), anything else clipped.
func envProblem(err error) string {
	var ee *slurm.EnvError
	if errors.As(err, &ee) && !ee.Unset {
		// The message may quote a part of the value again.
		return ee.Var + "=" + srunconf.ShowN(ee.Value, 120) + ": " + srunconf.Clip(ee.Msg, 100)
	}
	return srunconf.Clip(err.Error(), msgMax)
}

// refuses says whether any runtime check is set to refuse.
func (in *inputs) refuses() bool {
	for _, a := range in.srunwrap.Checks {
		if a == srunconf.CheckRefuse {
			return true
		}
	}
	return false
}
