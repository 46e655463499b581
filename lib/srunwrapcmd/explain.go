package srunwrapcmd

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"gpuprep/lib/bind"
	"gpuprep/lib/cmdenv"
	"gpuprep/lib/cpuset"
	"gpuprep/lib/nccl"
	"gpuprep/lib/plural"
	"gpuprep/lib/slurm"
	"gpuprep/lib/srunconf"
	"gpuprep/lib/textfmt"
	"gpuprep/lib/topo"
)

// rankPlan is one local rank's whole plan, as --explain shows it.
type rankPlan struct {
	LocalID   int             `json:"local_id"`
	GPU       *bind.GPUChoice `json:"gpu"`
	Visible   string          `json:"cuda_visible_devices,omitempty"`
	CPUs      string          `json:"cpus"`
	CPUsFrom  string          `json:"cpus_from"`
	MemPolicy string          `json:"mem_policy"`
	MemNodes  []int           `json:"mem_nodes"`
	MemFrom   string          `json:"mem_from"`
	HCAs      []string        `json:"hcas"`
	HCAFrom   string          `json:"hcas_from"`
	Env       []nccl.Var      `json:"env"`
	Warnings  []bind.Warning  `json:"warnings"`
	MPS       mpsPlan         `json:"mps"`
	plan      bind.Plan
}

// explanation is --explain's whole output.
type explanation struct {
	Node     string     `json:"node"`
	Source   string     `json:"node_source"`
	Config   string     `json:"config"`
	Tasks    int        `json:"tasks"`
	TasksBy  string     `json:"tasks_from"`
	Ranks    []rankPlan `json:"ranks"`
	Problems []string   `json:"problems,omitempty"`
}

// explainMain prints every local rank's plan and runs nothing. In a Slurm
// step the ranks are the step's; outside one, --tasks ranks (default one
// per GPU) over every GPU of the node, with this process's CPUs.
func explainMain(e cmdenv.Env, f flags, in *inputs) int {
	if in.node == nil {
		return cmdenv.Fail(e.Stderr, prog, cmdenv.ExitMismatch, fmt.Errorf("cannot read the node: %v", in.nodeErr))
	}
	x := explanation{Node: in.nodeName, Source: in.source, Config: in.cfgFrom}
	bi := in.bindInput(false)
	task, by := in.task, "the Slurm step (SLURM_STEP_TASKS_PER_NODE)"
	if in.taskErr != nil || f.tasks > 0 {
		// A whole-node job: every CPU is the job's.
		task, by = syntheticTask(in, f.tasks)
		bi.Allowed = nodeCPUs(in.node)
		bi.JobCPUs = bi.Allowed
		if in.taskErr != nil {
			x.Problems = append(x.Problems, "not in a Slurm step ("+notInStep(in.taskErr)+"): planning "+by)
		}
	}
	for _, p := range in.problems() {
		if in.taskErr == nil || p != in.taskProblem() {
			x.Problems = append(x.Problems, p)
		}
	}
	bi.Task = task
	plans := bind.PlanNode(bi)
	x.Tasks, x.TasksBy = len(plans), by
	for _, p := range plans {
		x.Ranks = append(x.Ranks, rankOf(in, bi, p, e.Getenv))
	}
	if f.json {
		if err := cmdenv.WriteJSON(e.Stdout, x); err != nil {
			return cmdenv.Fail(e.Stderr, prog, cmdenv.ExitBadInput, err)
		}
		return cmdenv.ExitOK
	}
	writeExplanation(e.Stdout, x)
	return cmdenv.ExitOK
}

// syntheticTask is n ranks on this node seeing every GPU, for --explain
// outside a step (or with --tasks).
func syntheticTask(in *inputs, n int) (slurm.Task, string) {
	var vis []slurm.DeviceRef
	var idx []int
	for _, g := range in.node.GPUs {
		vis = append(vis, slurm.DeviceRef{Index: g.Index})
		idx = append(idx, g.Index)
	}
	by := "--tasks"
	if n == 0 {
		n, by = max(len(vis), 1), "one per GPU"
		if len(vis) == 0 {
			by = "one per GPU, at least one"
		}
	}
	t := slurm.Task{NodeTasks: n, StepNodes: 1, VisibleDevices: vis, StepGPUs: idx, GPUsOnNode: len(idx)}
	ranks := plural.Count(n, "rank", "ranks")
	switch len(vis) {
	case 0:
		return t, fmt.Sprintf("%s on a node without GPUs (%s)", ranks, by)
	case 1:
		return t, fmt.Sprintf("%s over the node's one GPU (%s)", ranks, by)
	}
	return t, fmt.Sprintf("%s over all %d GPUs (%s)", ranks, len(vis), by)
}

// notInStep says why this is no Slurm task, for --explain's note: an unset
// variable by name alone (the note says the rest), else the whole error.
func notInStep(err error) string {
	var ee *slurm.EnvError
	if errors.As(err, &ee) && ee.Unset {
		return ee.Var + " is not set"
	}
	return envProblem(err)
}

// nodeCPUs is every CPU of the node's cores.
func nodeCPUs(n *topo.Node) cpuset.Set {
	all := cpuset.New()
	for _, c := range n.Cores {
		all = all.Union(c.CPUs)
	}
	return all
}

// rankOf completes a rank's plan (made from bi) with its MPS and NCCL
// variables.
func rankOf(in *inputs, bi bind.Input, p bind.Plan, getenv func(string) string) rankPlan {
	visible := p.Visible
	if visible == "" {
		visible = getenv("CUDA_VISIBLE_DEVICES")
	}
	m := in.planMPS(bi, p, getenv, visible, false)
	for _, v := range m.Set {
		if v.Name == "CUDA_VISIBLE_DEVICES" {
			visible = v.Value
		}
	}
	env := func(name string) string {
		if name == "CUDA_VISIBLE_DEVICES" {
			return visible
		}
		for _, v := range m.Set {
			if v.Name == name {
				return v.Value
			}
		}
		return getenv(name)
	}
	r := rankPlan{
		LocalID: p.LocalID, GPU: p.GPU, Visible: p.Visible, CPUs: p.CPUs.String(), CPUsFrom: p.CPUsFrom,
		MemPolicy: p.MemPolicy, MemNodes: p.MemNodes, MemFrom: p.MemFrom, HCAs: p.HCAs, HCAFrom: p.HCAFrom,
		Env: nccl.Plan(in.ncclInput(p, env)), Warnings: p.Warnings, MPS: m, plan: p,
	}
	if visible != getenv("CUDA_VISIBLE_DEVICES") {
		r.Visible = visible
	}
	if r.Env == nil {
		r.Env = []nccl.Var{}
	}
	if r.Warnings == nil {
		r.Warnings = []bind.Warning{}
	}
	return r
}

func writeExplanation(w io.Writer, x explanation) {
	fmt.Fprintf(w, "node %s: %s\n", srunconf.Show(x.Node), x.TasksBy)
	fmt.Fprintf(w, "  node from %s\n  config from %s\n", x.Source, x.Config)
	for _, p := range x.Problems {
		fmt.Fprintf(w, "  note: %s\n", p)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "rank\tGPU\tNUMA\tCPUs\tmemory\tHCAs")
	for _, r := range x.Ranks {
		gpu, numa := "-", "-"
		if r.GPU != nil {
			gpu = fmt.Sprintf("%d %s", r.GPU.Index, r.GPU.BusID)
			if r.GPU.MIG != "" {
				gpu += " " + r.GPU.MIG
			}
			numa = fmt.Sprint(r.GPU.NUMA)
		}
		cpus := r.CPUs
		if cpus == "" {
			cpus = "unchanged"
		}
		mem := "unchanged"
		if r.MemNodes != nil && r.MemPolicy != "off" {
			mem = r.MemPolicy + " " + textfmt.JoinInts(r.MemNodes, ",")
		}
		hcas := strings.Join(r.HCAs, ",")
		if hcas == "" {
			hcas = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", r.LocalID, gpu, numa, cpus, mem, hcas)
	}
	tw.Flush()
	for _, r := range x.Ranks {
		fmt.Fprintf(w, "\nrank %d:\n", r.LocalID)
		if r.GPU != nil {
			fmt.Fprintf(w, "  GPU       %s\n", r.GPU.From)
		}
		if r.Visible != "" {
			fmt.Fprintf(w, "  sets      CUDA_VISIBLE_DEVICES=%s\n", srunconf.Show(r.Visible))
		}
		fmt.Fprintf(w, "  CPUs      %s\n", r.CPUsFrom)
		fmt.Fprintf(w, "  memory    %s\n", r.MemFrom)
		if r.HCAFrom != "" {
			fmt.Fprintf(w, "  HCAs      %s\n", r.HCAFrom)
		}
		fmt.Fprintf(w, "  MPS       %s\n", r.MPS.Why)
		for _, v := range r.Env {
			fmt.Fprintf(w, "  %s=%s  (%s)\n", v.Name, srunconf.ShowN(v.Value, srunconf.ShowMax/2), v.From)
		}
		for _, wn := range r.Warnings {
			fmt.Fprintf(w, "  warning (%s): %s\n", wn.Check, wn.Msg)
		}
	}
}
