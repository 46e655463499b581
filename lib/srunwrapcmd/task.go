package srunwrapcmd

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"strings"

	"gpuprep/lib/srunconf"

	"gpuprep/lib/bind"
	"gpuprep/lib/cmdenv"
	"gpuprep/lib/nccl"
	"gpuprep/lib/nodedesc"
	"gpuprep/lib/plural"
	"gpuprep/lib/textfmt"
)

// Exit codes of a command that could not be run, as a shell gives them.
const (
	exitCannotExec = 126
	exitNotFound   = 127
)

// taskMain runs one task: plan, set the environment, check, bind, exec.
// It returns only when the command does not run.
func taskMain(e cmdenv.Env, f flags, in *inputs, sys system, argv []string) int {
	env := newEnvList(sys.environ())
	// Messages about the node and the job are the same in every rank:
	// local rank 0 prints them (every rank when the rank is unknown).
	first := in.taskErr != nil || in.task.LocalID == 0
	rank := ""
	if in.taskErr == nil {
		rank = fmt.Sprintf("rank %d", in.task.ProcID)
	}
	d := decider{w: e.Stderr, quiet: f.quiet, cfg: in.srunwrap, rank: rank}
	plan := planTask(e, f, in, &d, env, argv, rank)
	if first || in.refuses() {
		runtimeChecks(in, sys, &d, env, first)
	}
	if first && in.taskErr == nil && in.task.JobID != 0 {
		printNotices(e.Stderr, in, f.quiet)
	}
	if d.refused {
		return refused(e, in, rank, argv)
	}
	path, err := sys.lookPath(argv[0])
	if err != nil {
		code := exitCannotExec
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			code = exitNotFound
		}
		return cmdenv.Fail(e.Stderr, prog, code, fmt.Errorf("%s: %w", quoteArg(argv[0]), unwrapExec(err)))
	}
	// Affinity and memory policy are per thread: bind this one and exec
	// from it (run locked it to this goroutine).
	if plan != nil && (!plan.CPUs.IsEmpty() || plan.MemNodes != nil) {
		bindTask(sys, &d, *plan)
		if d.refused {
			return refused(e, in, rank, argv)
		}
	}
	err = sys.exec(path, argv, env.list())
	return cmdenv.Fail(e.Stderr, prog, exitCannotExec, fmt.Errorf("exec %s: %w", quoteArg(path), err))
}

// planTask plans the rank's binding, GPUs, MPS and NCCL variables into
// env, with their warnings through d; nil when the rank runs unbound (bad
// or missing input never stops the command).
func planTask(e cmdenv.Env, f flags, in *inputs, d *decider, env *envList, argv []string, rank string) *bind.Plan {
	if in.taskErr != nil || in.node == nil {
		d.input(fmt.Sprintf("%s: running %s unbound", srunconf.Clip(strings.Join(in.problems(), "; "), srunconf.ShowMax), quoteArgN(argv[0], argMax)))
		return nil
	}
	for _, p := range in.problems() {
		d.input(p)
	}
	p := bind.PlanRank(in.bindInput(true), in.task.LocalID)
	for _, w := range p.Warnings {
		d.check(w.Check, w.Msg)
	}
	if p.Visible != "" {
		env.set("CUDA_VISIBLE_DEVICES", p.Visible)
	}
	m := in.planMPS(in.bindInput(true), p, env.get, env.get("CUDA_VISIBLE_DEVICES"), true)
	if m.Warn {
		d.input(m.Why)
	}
	m.apply(env)
	for _, v := range nccl.Plan(in.ncclInput(p, env.get)) {
		if !v.Kept {
			env.set(v.Name, v.Value)
		}
	}
	if f.verbose {
		fmt.Fprintf(e.Stderr, "%s: %s%s\n", prog, prefix(rank), summary(p, env.get))
	}
	return &p
}

// runtimeChecks runs the checks of what every rank shares (the mount
// namespace, the inherited environment, the memlock limit): local rank 0
// (first) reports them; the other ranks run them only to refuse.
func runtimeChecks(in *inputs, sys system, d *decider, env *envList, first bool) {
	memlock, err := sys.memlock()
	if err != nil {
		memlock = ^uint64(0) // unknown: not reported
	}
	for _, fd := range nccl.Check(in.root, env.get, memlock) {
		switch {
		case fd.Note && first:
			d.note(fd.Check, fd.Msg)
		case fd.Note:
		case first || in.srunwrap.SrunwrapCheck(fd.Check) == srunconf.CheckRefuse:
			d.check(fd.Check, fd.Msg)
		}
	}
}

// bindTask binds this thread as plan says; what failed is a placement
// finding through d, and the rank runs unbound.
func bindTask(sys system, d *decider, plan bind.Plan) {
	_, warns, err := sys.apply(plan)
	for _, w := range warns {
		d.check(w.Check, w.Msg)
	}
	if err != nil {
		d.check("placement", fmt.Sprintf("binding failed, running unbound: %v", err))
	}
}

// refused says the command is not run because [srunwrap.checks] refused
// one of the rank's findings.
func refused(e cmdenv.Env, in *inputs, rank string, argv []string) int {
	fmt.Fprintf(e.Stderr, "%s: %snot running %s: refused by [srunwrap.checks] in %s\n", prog, prefix(rank), quoteArg(argv[0]), in.cfgFrom)
	return cmdenv.ExitMismatch
}

// decider applies [srunwrap.checks] to each problem found: off drops it,
// warn prints it, refuse prints it and stops the command.
type decider struct {
	w       io.Writer
	quiet   bool
	cfg     srunconf.SrunwrapSection
	rank    string
	refused bool
}

func (d *decider) check(check, msg string) {
	switch d.cfg.SrunwrapCheck(check) {
	case srunconf.CheckOff:
		return
	case srunconf.CheckRefuse:
		d.refused = true
		fmt.Fprintf(d.w, "%s: %s%s (check %s: refuse)\n", prog, prefix(d.rank), msg, check)
		return
	}
	d.input(msg)
}

// note prints what a check noted that is no problem (nccl.Finding.Note):
// a warning unless the check is off, never a refusal.
func (d *decider) note(check, msg string) {
	if d.cfg.SrunwrapCheck(check) != srunconf.CheckOff {
		d.input(msg)
	}
}

// input reports bad or missing input: always a warning, never a refusal
// (a user's odd environment runs the command unbound).
func (d *decider) input(msg string) {
	if d.rank == "" {
		warnf(d.w, d.quiet, "%s", msg)
		return
	}
	warnf(d.w, d.quiet, "%s: %s", d.rank, msg)
}

// prefix is "rank N: ", or "" when the rank is unknown.
func prefix(rank string) string {
	if rank == "" {
		return ""
	}
	return rank + ": "
}

// printNotices prints what the prolog recorded for this job that its user
// should know (a profile that fell back, knobs skipped, warnings).
func printNotices(w io.Writer, in *inputs, quiet bool) {
	n, err := nodedesc.LoadNotice(in.root, in.task.JobID)
	if err != nil {
		warnf(w, quiet, "job %d: %s", in.task.JobID, srunconf.Clip(err.Error(), msgMax))
		return
	}
	for _, m := range n.Messages {
		fmt.Fprintf(w, "%s: job %d on %s: %s\n", prog, in.task.JobID, srunconf.ShowN(in.nodeName, summaryMax), srunconf.Clip(m, msgMax))
	}
}

// summary is one rank's plan on one line.
func summary(p bind.Plan, getenv func(string) string) string {
	var b strings.Builder
	if p.GPU != nil {
		fmt.Fprintf(&b, "GPU %d", p.GPU.Index)
		if p.GPU.MIG != "" {
			fmt.Fprintf(&b, " (%s)", p.GPU.MIG)
		}
	} else {
		b.WriteString("no GPU")
	}
	if p.CPUs.IsEmpty() {
		b.WriteString(", CPUs unchanged")
	} else {
		fmt.Fprintf(&b, ", CPUs %s", p.CPUs)
	}
	if p.MemNodes == nil || p.MemPolicy == srunconf.MemOff {
		b.WriteString(", memory unchanged")
	} else {
		fmt.Fprintf(&b, ", memory %s %s", p.MemPolicy, textfmt.JoinInts(p.MemNodes, ","))
	}
	for _, name := range []string{"CUDA_VISIBLE_DEVICES", "NCCL_IB_HCA", "CUDA_MPS_PIPE_DIRECTORY"} {
		if v := getenv(name); v != "" {
			fmt.Fprintf(&b, ", %s=%s", name, srunconf.ShowN(v, summaryMax))
		}
	}
	if len(p.Warnings) > 0 {
		fmt.Fprintf(&b, ", %s", plural.Count(len(p.Warnings), "warning", "warnings"))
	}
	return b.String()
}

// summaryMax is how much of each value --verbose's one-line summary
// shows: a GPU UUID whole (40 bytes), three long values on a line under
// 400 bytes.
const summaryMax = 40

// msgMax is how much of a message made elsewhere (another package's
// error, the prolog's notice) srunwrap prints (srunconf.Clip).
const msgMax = 240

// quoteArg shows a command name as typed, quoted only when it needs it,
// clipped when long (srunconf.Show).
func quoteArg(s string) string { return quoteArgN(s, argMax) }

// argMax is how much of a command's name srunwrap shows: it shares its
// line with a problem or the configuration's path.
const argMax = 120

// quoteArgN is quoteArg showing at most n bytes of the name.
func quoteArgN(s string, n int) string {
	if len(s) > n {
		return srunconf.ShowN(s, n)
	}
	if s == "" || strings.ContainsAny(s, " \t\n\"'\\$`") {
		return fmt.Sprintf("%q", s)
	}
	return s
}

// unwrapExec drops exec.Error's own "exec: NAME:" prefix, and the path of
// a *fs.PathError in it, which the message already carries.
func unwrapExec(err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		err = ee.Err
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
