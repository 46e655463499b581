package vmnode

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Job states that end a job (scontrol's JobState).
var EndedStates = []string{"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", Purged}

// Purged is the state JobState gives a job slurmctld no longer knows
// (scontrol: "Invalid job id specified"): it ended MinJobAge (300 s) ago,
// or it was purged sooner, as a job slurmctld restored on a node that then
// rebooted was once (a CI run then polled it until its deadline). It counts
// as ended.
const Purged = "PURGED"

// jobGone says whether err is scontrol's answer for a job it does not know.
func jobGone(err error) bool {
	return err != nil && strings.Contains(err.Error(), "Invalid job id specified")
}

// Sbatch submits a batch job as user ("" or "root" for root) running the
// shell command wrap (sbatch --wrap), its output to /dev/null unless args
// say otherwise, and returns its id. args are more sbatch options
// ("-c2", "--comment=...").
func (v *VM) Sbatch(ctx context.Context, user, wrap string, args ...string) (int, error) {
	cmd := "sbatch --parsable"
	if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "-o") || strings.HasPrefix(a, "--output") }) {
		cmd += " -o /dev/null"
	}
	for _, a := range args {
		cmd += " " + Quote(a)
	}
	cmd += " --wrap " + Quote(wrap)
	out, _, err := v.RunAs(ctx, user, cmd)
	if err != nil {
		return 0, err
	}
	idStr, _, _ := strings.Cut(strings.TrimSpace(out), ";")
	id, err := strconv.Atoi(idStr)
	if err != nil {
		return 0, fmt.Errorf("vmnode: sbatch printed %q", out)
	}
	return id, nil
}

// SbatchSleep submits a batch job as user that sleeps seconds.
func (v *VM) SbatchSleep(ctx context.Context, user string, seconds int, args ...string) (int, error) {
	return v.Sbatch(ctx, user, "sleep "+strconv.Itoa(seconds), args...)
}

// Srun runs srun as user with args (each quoted) and returns its output.
func (v *VM) Srun(ctx context.Context, user string, args ...string) (stdout, stderr string, err error) {
	cmd := "srun"
	for _, a := range args {
		cmd += " " + Quote(a)
	}
	return v.RunAs(ctx, user, cmd)
}

// Job is `scontrol show job -o ID` as a map (JobState, Reason, NodeList, ...).
func (v *VM) Job(ctx context.Context, id int) (map[string]string, error) {
	out, _, err := v.Run(ctx, jobCmd(id))
	if err != nil {
		return nil, err
	}
	return ParseScontrol(out), nil
}

// jobCmd prints the job as one line of Key=Value fields.
func jobCmd(id int) string { return "scontrol show job -o " + strconv.Itoa(id) }

// ParseScontrol splits one line of `scontrol show ... -o` into its
// Key=Value fields; a word without "=" belongs to the value before it.
func ParseScontrol(line string) map[string]string {
	m := map[string]string{}
	fields := strings.Fields(strings.TrimSpace(line))
	var key string
	for _, f := range fields {
		k, val, ok := strings.Cut(f, "=")
		if ok && k != "" {
			key = k
			m[key] = val
			continue
		}
		if key != "" {
			m[key] += " " + f
		}
	}
	return m
}

// JobState is the job's JobState ("PENDING", "RUNNING", "COMPLETED", ...).
func (v *VM) JobState(ctx context.Context, id int) (string, error) {
	j, err := v.Job(ctx, id)
	if jobGone(err) {
		return Purged, nil
	}
	if err != nil {
		return "", err
	}
	return j["JobState"], nil
}

// probeJobState is JobState as one attempt of a polling loop (probeTimeout).
func (v *VM) probeJobState(ctx context.Context, id int) (string, error) {
	out, err := v.probe(ctx, jobCmd(id))
	if jobGone(err) {
		return Purged, nil
	}
	if err != nil {
		return "", err
	}
	return ParseScontrol(out)["JobState"], nil
}

// probeNodeState is NodeState as one attempt of a polling loop.
func (v *VM) probeNodeState(ctx context.Context) (state, reason string, err error) {
	out, err := v.probe(ctx, nodeStateCmd)
	if err != nil {
		return "", "", err
	}
	state, reason, _ = strings.Cut(strings.TrimSpace(out), "|")
	return state, reason, nil
}

// WaitJobState polls (every half second) until the job is in one of states
// and returns that state; a job that ends in another state (Purged
// included) is an error.
func (v *VM) WaitJobState(ctx context.Context, id int, states ...string) (string, error) {
	var last string
	for {
		st, err := v.probeJobState(ctx, id)
		if err == nil {
			last = st
			if slices.Contains(states, st) {
				return st, nil
			}
			if slices.Contains(EndedStates, st) {
				return st, fmt.Errorf("vmnode: job %d ended %s, waited for %s", id, st, strings.Join(states, "|"))
			}
		}
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("vmnode: job %d is %s, waited for %s: %w", id, last, strings.Join(states, "|"), ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// WaitJobRunning waits until the batch job runs on the node, not only in
// slurmctld's eyes (RUNNING comes before the prolog): its batch step's
// cgroup holds processes, so the prolog is done and the job script runs.
// It returns the job's cgroup (see JobCgroup).
func (v *VM) WaitJobRunning(ctx context.Context, id int) (string, error) {
	if st, err := v.WaitJobState(ctx, id, "RUNNING"); err != nil {
		return "", fmt.Errorf("%w (state %s)", err, st)
	}
	// The job script's processes: step_batch/user/task_N (cgroup/v2).
	for {
		if cg, err := v.probeJobCgroup(ctx, id); err == nil {
			if _, err := v.probe(ctx, "cat "+cg+"/step_batch/user/task_*/cgroup.procs 2>/dev/null | grep -q ."); err == nil {
				return cg, nil
			}
		}
		if st, err := v.probeJobState(ctx, id); err == nil && st != "RUNNING" {
			return "", fmt.Errorf("vmnode: job %d is %s, waited for it to run", id, st)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("vmnode: job %d has no batch step with processes: %w", id, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// WaitJobEnd waits until the job ended (any of EndedStates) and its epilog
// finished: the node has no job of it left (squeue lists it no more as
// COMPLETING).
func (v *VM) WaitJobEnd(ctx context.Context, id int) (string, error) {
	st, err := v.WaitJobState(ctx, id, EndedStates...)
	if err != nil {
		return st, err
	}
	_, err = v.WaitUntil(ctx, 500*time.Millisecond, "! squeue -h -t CG -j "+strconv.Itoa(id)+" | grep -q .")
	return st, err
}

// Cancel cancels the job (scancel as root).
func (v *VM) Cancel(ctx context.Context, id int) error {
	_, _, err := v.Run(ctx, "scancel "+strconv.Itoa(id))
	return err
}

// nodeStateCmd prints the node's state and reason as "state|reason".
const nodeStateCmd = "sinfo -h -n " + NodeName + " -o '%T|%E'"

// NodeState is the node's sinfo state (%T: idle, mixed, allocated,
// drained, ...) and reason (%E).
func (v *VM) NodeState(ctx context.Context) (state, reason string, err error) {
	out, _, err := v.Run(ctx, nodeStateCmd)
	if err != nil {
		return "", "", err
	}
	state, reason, _ = strings.Cut(strings.TrimSpace(out), "|")
	return state, reason, nil
}

// WaitNodeState polls (every second) until the node is in one of states.
// On a timeout it returns the last state sinfo did print: a probe cut short
// by the deadline itself never hides what the node was.
func (v *VM) WaitNodeState(ctx context.Context, states ...string) (state, reason string, err error) {
	var probeErr error
	for {
		st, why, err := v.probeNodeState(ctx)
		if err == nil {
			state, reason = st, why
			if slices.Contains(states, state) {
				return state, reason, nil
			}
		}
		probeErr = err
		if !v.Running() {
			return state, reason, v.exited()
		}
		select {
		case <-ctx.Done():
			return state, reason, fmt.Errorf("vmnode: node is %q (%s), waited for %s: %w (last probe: %v)", state, reason, strings.Join(states, "|"), ctx.Err(), probeErr)
		case <-time.After(time.Second):
		}
	}
}

// Resume resumes a drained node.
func (v *VM) Resume(ctx context.Context) error {
	_, _, err := v.Run(ctx, "scontrol update nodename="+NodeName+" state=resume")
	return err
}

// JobCgroup is the job's cgroup in the VM: the folder under Slurm's
// slurmstepd scope that holds the job's slurmstepd processes (named
// "slurmstepd: [<id>.<step>]"), wherever the scope sits. Slurm 22.05 and
// 24.11 name it job_<id> (/sys/fs/cgroup/system.slice/
// gpunode_slurmstepd.scope/job_<id> with Debian's build), 26.05 by the
// job's SLUID. It exists from the prolog (PrologFlags=Contain: the extern
// step) to the job's end.
func (v *VM) JobCgroup(ctx context.Context, id int) (string, error) {
	out, _, err := v.Run(ctx, jobCgroupCmd(id))
	if err != nil {
		return "", err
	}
	return jobCgroupOf(id, out)
}

// probeJobCgroup is JobCgroup for a polling loop (see probe).
func (v *VM) probeJobCgroup(ctx context.Context, id int) (string, error) {
	out, err := v.probe(ctx, jobCgroupCmd(id))
	if err != nil {
		return "", err
	}
	return jobCgroupOf(id, out)
}

// jobCgroupCmd prints the cgroup v2 path of each slurmstepd of job id.
func jobCgroupCmd(id int) string {
	return fmt.Sprintf(`for p in $(pgrep -f '^slurmstepd: \[%d\.'); do sed -n 's/^0:://p' /proc/$p/cgroup; done; true`, id)
}

// jobCgroupOf picks the job's cgroup from its slurmstepds' cgroups
// (".../gpunode_slurmstepd.scope/<job>/step_extern/slurm"): the folder
// right below the scope.
func jobCgroupOf(id int, out string) (string, error) {
	for _, l := range strings.Fields(out) {
		parts := strings.Split(l, "/")
		for i, p := range parts {
			if strings.HasSuffix(p, "slurmstepd.scope") && i+1 < len(parts) && parts[i+1] != "" && parts[i+1] != "system" {
				return "/sys/fs/cgroup" + strings.Join(parts[:i+2], "/"), nil
			}
		}
	}
	return "", fmt.Errorf("vmnode: no cgroup of job %d under any *slurmstepd.scope (its slurmstepds' cgroups: %q)", id, out)
}

// CgroupOf is the cgroup v2 path of the process pid in the VM (from
// /proc/PID/cgroup, relative to /sys/fs/cgroup: "/system.slice/slurmd.service").
func (v *VM) CgroupOf(ctx context.Context, pid int) (string, error) {
	out, err := v.ReadFile(ctx, "/proc/"+strconv.Itoa(pid)+"/cgroup")
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(out, "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			return p, nil
		}
	}
	return "", fmt.Errorf("vmnode: no cgroup v2 line for pid %d: %q", pid, out)
}

// MainPID is the main process of a systemd unit ("slurmd.service").
func (v *VM) MainPID(ctx context.Context, unit string) (int, error) {
	out, _, err := v.Run(ctx, "systemctl show -p MainPID --value "+Quote(unit))
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil || pid == 0 {
		return 0, fmt.Errorf("vmnode: %s has no main process (%q)", unit, strings.TrimSpace(out))
	}
	return pid, nil
}

// SlurmVersion is the VM's Slurm release, from `sinfo -V` ("slurm-wlm
// 26.05.5" from Debian's package, "slurm 22.05.8" from a source build):
// 26.05 is major 26, minor 5.
func (v *VM) SlurmVersion(ctx context.Context) (major, minor int, err error) {
	out, _, err := v.Run(ctx, "sinfo -V")
	if err != nil {
		return 0, 0, err
	}
	return parseSlurmVersion(out)
}

// parseSlurmVersion reads `sinfo -V`'s output.
func parseSlurmVersion(out string) (major, minor int, err error) {
	f := strings.Fields(out)
	if len(f) == 2 {
		parts := strings.Split(f[1], ".")
		if len(parts) >= 2 {
			major, err1 := strconv.Atoi(parts[0])
			minor, err2 := strconv.Atoi(parts[1])
			if err1 == nil && err2 == nil {
				return major, minor, nil
			}
		}
	}
	return 0, 0, fmt.Errorf("vmnode: sinfo -V printed %q, want \"slurm <major>.<minor>.<micro>\"", strings.TrimSpace(out))
}

// NamesJobCgroupsBySLUID says whether Slurm release major.minor names a
// job's cgroup by its SLUID (26.05, seen in the sid VM) rather than
// job_<id> (22.05 and 24.11, seen in the bookworm and trixie VMs). The
// releases between were not run; 26.05 is the first with SLUIDs.
func NamesJobCgroupsBySLUID(major, minor int) bool {
	return major > 26 || (major == 26 && minor >= 5)
}
