package health

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
	"gpuprep/lib/slurm"
	"gpuprep/lib/textfmt"
)

// leftovers is the leftover_processes check: processes on the job's GPUs
// (NVML's running processes) that belong to the finished job (their
// /proc/<pid>/cgroup names Slurm's job_<id>, or the job's SLUID on Slurm
// 26.05). Slurm has killed the job's
// processes by the time the epilog runs, so one still there is stuck
// (uninterruptible, holding the GPU) and the next job would share the GPU.
func leftovers(_ context.Context, o Options, f *Facts) []Result {
	const c = "leftover_processes"
	sev := o.Health.HealthSeverity(c)
	if sev == config.HealthOff {
		return []Result{skip(c, nodeScope, "off in [health.severity]")}
	}
	if o.JobID == "" {
		return []Result{skip(c, nodeScope, "no job id")}
	}
	processes := func(d gpu.Device) ([]int, error) { return procHolders(o, d.Minor) }
	if pl, can := gpu.As[gpu.ProcessLister](o.GPU); can && o.GPU != nil {
		processes = func(d gpu.Device) ([]int, error) { return pl.Processes(d.Index) }
	}
	var out []Result
	for _, g := range f.GPUs {
		scope := gpuScope(g.Dev)
		pids, err := processes(g.Dev)
		if err != nil {
			out = append(out, unreadable(c, scope, err))
			continue
		}
		var left []string
		for _, pid := range pids {
			if inJob(o, pid) {
				left = append(left, strconv.Itoa(pid))
			}
		}
		if len(left) == 0 {
			out = append(out, ok(c, scope, "none"))
			continue
		}
		r := fail(c, scope, fmt.Sprintf("process %s of job %s still on the GPU after the job", strings.Join(left, ", "), o.JobID))
		r.Severity = sev
		out = append(out, r)
	}
	for i := range out {
		out[i].BusID = f.GPUs[i].Dev.BusID // one result per GPU, in order
	}
	if len(out) == 0 {
		out = append(out, skip(c, nodeScope, "no GPUs in scope"))
	}
	return out
}

// procHolders is the procfs way (no NVML): the processes holding
// /dev/nvidia<minor> open, by /proc/<pid>/fd/* links, among those whose
// /proc/<pid>/cgroup is the job's (only the job's are looked at, so the
// walk stays short).
func procHolders(o Options, minor int) ([]int, error) {
	dirs, err := o.Root.Glob("/proc/[0-9]*/cgroup")
	if err != nil {
		return nil, err
	}
	dev := fmt.Sprintf("/dev/nvidia%d", minor)
	var pids []int
	for _, cg := range dirs {
		pid, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSuffix(cg, "/cgroup"), "/proc/"))
		if err != nil || !inJob(o, pid) {
			continue
		}
		fds, _ := o.Root.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
		for _, fd := range fds {
			if target, err := os.Readlink(o.Root.Path(fd)); err == nil && target == dev {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids, nil
}

// inJob says whether /proc/<pid>/cgroup puts the process in the job's
// Slurm cgroup: a path with a job_<id> folder (cgroup v1 or v2), or with
// a folder named by the job's SLUID (Slurm 26.05, cgroup v2).
func inJob(o Options, pid int) bool {
	b, err := o.Root.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	return err == nil && slurm.ProcInJob(string(b), o.JobID, o.JobSLUID)
}

// external runs [health] external_command (argv, no shell) with
// external_timeout: a non-zero exit or the timeout fails the check with
// the last line of its output. The command runs in its own process group,
// killed whole on timeout.
// External runs [health] external_command now, as the epilog's "external"
// check does, for gpuprep-health on an idle node (Options.Extra); a DCGM
// diagnostic above level 1 (HeavyDiag) is skipped, saying why.
func External(ctx context.Context, h config.HealthSection) []Result {
	if why := HeavyDiag(h.ExternalCommand); why != "" {
		return []Result{skip("external", nodeScope, why+": gpuprep-health never runs it; the epilog does")}
	}
	return external(ctx, Options{Health: h})
}

func external(ctx context.Context, o Options) []Result {
	const c = "external"
	argv := o.Health.ExternalCommand
	sev := o.Health.HealthSeverity(c)
	switch {
	case len(argv) == 0:
		return []Result{skip(c, nodeScope, "not configured (health.external_command)")}
	case sev == config.HealthOff:
		return []Result{skip(c, nodeScope, "off in [health.severity]")}
	case o.ReadOnly:
		return []Result{skip(c, nodeScope, "not run in a read-only run")}
	}
	timeout := o.Health.ExternalTimeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	name := strings.Join(argv, " ")
	switch {
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		r := fail(c, nodeScope, fmt.Sprintf("external check %q timed out after %s", name, timeout))
		r.Severity = sev
		return []Result{r}
	case err != nil:
		r := fail(c, nodeScope, fmt.Sprintf("external check %q: %v: %s", name, err, lastLine(buf.String())))
		r.Severity = sev
		return []Result{r}
	}
	return []Result{ok(c, nodeScope, name+": "+lastLine(buf.String()))}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return textfmt.Fit(strings.TrimSpace(lines[len(lines)-1]), 60)
}
