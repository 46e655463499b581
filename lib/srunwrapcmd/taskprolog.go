package srunwrapcmd

import (
	"fmt"

	"gpuprep/lib/bind"
	"gpuprep/lib/cmdenv"
	"gpuprep/lib/nccl"
)

// taskPrologMain is --task-prolog: for a Slurm TaskProlog, which runs
// with the task's environment before the task and whose "export NAME=VALUE"
// output lines slurmstepd puts in the task's environment. It prints the
// narrowed CUDA_VISIBLE_DEVICES, the MPS variables of the job's daemon
// (planMPS) and the NCCL variables; a TaskProlog cannot
// set the task's CPUs or memory policy (it is another process), so those
// stay Slurm's (--cpu-bind, --mem-bind). Warnings go to stderr, which
// slurmstepd logs.
func taskPrologMain(e cmdenv.Env, f flags, in *inputs) int {
	if in.taskErr != nil || in.node == nil {
		for _, p := range in.problems() {
			warnf(e.Stderr, f.quiet, "%s", p)
		}
		return cmdenv.ExitOK // nothing to export; the task runs as it is
	}
	p := bind.PlanRank(in.bindInput(true), in.task.LocalID)
	for _, w := range p.Warnings {
		warnf(e.Stderr, f.quiet, "rank %d: %s", in.task.ProcID, w.Msg)
	}
	var vars []nccl.Var
	if p.Visible != "" {
		vars = append(vars, nccl.Var{Name: "CUDA_VISIBLE_DEVICES", Value: p.Visible, From: "srunwrap: the rank's GPU"})
	}
	visible := p.Visible
	if visible == "" {
		visible = e.Getenv("CUDA_VISIBLE_DEVICES")
	}
	m := in.planMPS(in.bindInput(true), p, e.Getenv, visible, true)
	if m.Warn {
		warnf(e.Stderr, f.quiet, "rank %d: %s", in.task.ProcID, m.Why)
	}
	set := map[string]string{}
	for _, v := range m.Set {
		if v.Name == "CUDA_VISIBLE_DEVICES" {
			visible = v.Value
			if len(vars) == 0 {
				vars = append(vars, nccl.Var{Name: v.Name, Value: v.Value, From: "srunwrap: the rank's GPU, by UUID for MPS"})
			} else {
				vars[0].Value = v.Value
			}
			continue
		}
		set[v.Name] = v.Value
		vars = append(vars, nccl.Var{Name: v.Name, Value: v.Value, From: "srunwrap: the job's MPS daemon"})
	}
	getenv := func(name string) string {
		if name == "CUDA_VISIBLE_DEVICES" {
			return visible
		}
		if v, ok := set[name]; ok {
			return v
		}
		return e.Getenv(name)
	}
	for _, v := range nccl.Plan(in.ncclInput(p, getenv)) {
		if !v.Kept {
			vars = append(vars, v)
		}
	}
	out, err := nccl.TaskPrologLines(vars)
	if err != nil {
		return cmdenv.Fail(e.Stderr, prog, cmdenv.ExitBadInput, err)
	}
	fmt.Fprint(e.Stdout, out)
	return cmdenv.ExitOK
}
