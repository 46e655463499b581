package slurmharness

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DefaultTimeout bounds a client command (srun, sbatch, scontrol, sinfo,
// slurmd -G) when the caller's context has no deadline.
var DefaultTimeout = 60 * time.Second

// cleanEnv is env without any Slurm client variable inherited from an outer
// allocation (SLURM_*, SLURMD_*, SBATCH_*, SALLOC_*, SRUN_*, SQUEUE_*, SINFO_*), with
// SLURM_CONF set and the system sbin folders on PATH.
func cleanEnv(env []string, conf string) []string {
	out := make([]string, 0, len(env)+2)
	path := ""
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case k == "PATH":
			path = v
			continue
		case strings.HasPrefix(k, "SLURM_"), strings.HasPrefix(k, "SLURMD_"), strings.HasPrefix(k, "SBATCH_"), strings.HasPrefix(k, "SALLOC_"),
			strings.HasPrefix(k, "SRUN_"), strings.HasPrefix(k, "SQUEUE_"), strings.HasPrefix(k, "SINFO_"),
			strings.HasPrefix(k, "SCONTROL_"), strings.HasPrefix(k, "SCANCEL_"):
			continue
		}
		out = append(out, kv)
	}
	parts := strings.Split(path, ":")
	for _, d := range []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"} {
		if !slices.Contains(parts, d) {
			parts = append(parts, d)
		}
	}
	parts = slices.DeleteFunc(parts, func(s string) bool { return s == "" })
	return append(out, "PATH="+strings.Join(parts, ":"), "SLURM_CONF="+conf)
}

// Env is the environment a Slurm client of this cluster needs: the test's
// environment without inherited SLURM_* variables, plus SLURM_CONF.
func (c *Cluster) Env() []string { return slices.Clone(c.baseEnv) }

// Run runs a Slurm command (srun, sbatch, scontrol, sinfo, ...) against this
// cluster with its environment, in the cluster folder, bounded by ctx or
// DefaultTimeout. err is non-nil on a non-zero exit and then includes stderr.
func (c *Cluster) Run(ctx context.Context, name string, args ...string) (stdout, stderr string, err error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	bin, err := lookPath(name)
	if err != nil {
		return "", "", err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = c.baseEnv
	cmd.Dir = c.Dir
	cmd.WaitDelay = 5 * time.Second
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", err, ctx.Err())
		}
		err = fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(e.String()))
	}
	return o.String(), e.String(), err
}

// Srun runs srun with args (DefaultTimeout). srun's own messages (queued,
// allocated) go to stderr.
func (c *Cluster) Srun(args ...string) (stdout, stderr string, err error) {
	return c.Run(context.Background(), "srun", args...)
}

// MustSrun runs srun and fails the test unless it exits 0; it returns stdout.
func (c *Cluster) MustSrun(args ...string) string {
	c.t.Helper()
	out, _, err := c.Srun(args...)
	if err != nil {
		c.t.Fatalf("slurmharness: %v\n%s", err, c.logTails(20))
	}
	return out
}

// Submit writes script to jobs/job-N.sh (adding "#!/bin/sh" when it has no
// "#!" line) and submits it with sbatch; output goes to jobs/slurm-<id>.out
// (see JobOutput) unless args set -o.
func (c *Cluster) Submit(script string, args ...string) (int, error) {
	c.mu.Lock()
	c.jobSeq++
	n := c.jobSeq
	c.mu.Unlock()
	if !strings.HasPrefix(script, "#!") {
		script = "#!/bin/sh\n" + script
	}
	path := filepath.Join(c.Dir, "jobs", fmt.Sprintf("job-%d.sh", n))
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		return 0, err
	}
	a := []string{"--parsable", "-o", filepath.Join(c.Dir, "jobs", "slurm-%j.out")}
	a = append(a, args...)
	a = append(a, path)
	out, _, err := c.Run(context.Background(), "sbatch", a...)
	if err != nil {
		return 0, err
	}
	idStr, _, _ := strings.Cut(strings.TrimSpace(out), ";")
	id, err := strconv.Atoi(idStr)
	if err != nil {
		return 0, fmt.Errorf("sbatch printed %q, not a job id", out)
	}
	return id, nil
}

// Sbatch is Submit that fails the test on error.
func (c *Cluster) Sbatch(script string, args ...string) int {
	c.t.Helper()
	id, err := c.Submit(script, args...)
	if err != nil {
		c.t.Fatalf("slurmharness: %v\n%s", err, c.logTails(20))
	}
	return id
}

// JobOutput is the content of jobs/slurm-<id>.out of a job from Submit.
func (c *Cluster) JobOutput(id int) string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, "jobs", fmt.Sprintf("slurm-%d.out", id)))
	return string(b)
}

// Job is `scontrol show job -o ID` as a map (JobState, Reason, ExitCode,
// NodeList, ...). A value with spaces (Command=, WorkDir=) keeps them.
func (c *Cluster) Job(id int) (map[string]string, error) {
	out, _, err := c.Run(context.Background(), "scontrol", "show", "job", "-o", strconv.Itoa(id))
	if err != nil {
		return nil, err
	}
	return parseRecord(out), nil
}

// parseRecord splits a one-line scontrol record into Key=Value pairs; a token
// without '=' continues the previous value.
func parseRecord(line string) map[string]string {
	m := map[string]string{}
	last := ""
	for _, tok := range strings.Fields(strings.TrimSpace(line)) {
		k, v, ok := strings.Cut(tok, "=")
		if !ok || k == "" || strings.ContainsAny(k, "/()") {
			if last != "" {
				m[last] += " " + tok
			}
			continue
		}
		m[k] = v
		last = k
	}
	return m
}

var terminalStates = []string{
	"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
	"OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "REVOKED", "SPECIAL_EXIT",
}

// WaitJob polls scontrol until the job reaches a final state (COMPLETED,
// FAILED, CANCELLED, TIMEOUT, ...) or is held (a batch job whose prolog failed
// is requeued and held: it returns "PENDING" then, with
// Reason=launch_failed_requeued_held in Job). It fails the test when timeout
// passes first.
func (c *Cluster) WaitJob(id int, timeout time.Duration) string {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	var last map[string]string
	var lastErr error
	for {
		m, err := c.Job(id)
		if err == nil {
			last = m
			st, _, _ := strings.Cut(m["JobState"], "+")
			if slices.Contains(terminalStates, st) {
				return st
			}
			if st == "PENDING" && strings.Contains(strings.ToLower(m["Reason"]), "held") {
				return st
			}
		} else {
			lastErr = err
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("slurmharness: job %d not finished after %v: state %q reason %q (err %v)\n%s",
				id, timeout, last["JobState"], last["Reason"], lastErr, c.logTails(20))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Release releases a held job (scontrol release) and makes it eligible now:
// Slurm gives a requeued job a BeginTime of requeue time + cred_expire (120
// s by default), which would keep it pending for two minutes.
func (c *Cluster) Release(id int) error {
	if _, _, err := c.Run(context.Background(), "scontrol", "release", strconv.Itoa(id)); err != nil {
		return err
	}
	_, _, err := c.Run(context.Background(), "scontrol", "update", "jobid="+strconv.Itoa(id), "StartTime=now")
	return err
}

// NodeState is sinfo's state (%T: idle, allocated, mixed, drained,
// draining, down, inval, ...; a trailing '*' means not responding) and
// reason (%E; "" for none) of the node.
func (c *Cluster) NodeState() (state, reason string) {
	st, r, err := c.nodeState(10 * time.Second)
	if err != nil {
		return "error: " + err.Error(), ""
	}
	return st, r
}

func (c *Cluster) nodeState(timeout time.Duration) (state, reason string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, _, err := c.Run(ctx, "sinfo", "-h", "-N", "-n", c.Node, "-o", "%T|%E")
	if err != nil {
		return "", "", err
	}
	line := strings.TrimSpace(out)
	if line == "" {
		return "", "", fmt.Errorf("sinfo printed nothing for %s", c.Node)
	}
	line, _, _ = strings.Cut(line, "\n")
	state, reason, _ = strings.Cut(line, "|")
	if reason == "none" {
		reason = ""
	}
	return state, reason, nil
}

// WaitNodeState waits up to timeout for sinfo to show the node in one of
// states (e.g. "idle" after a job's completing phase, or "drained") and
// returns the state and reason it saw last; ok is false on timeout.
func (c *Cluster) WaitNodeState(timeout time.Duration, states ...string) (state, reason string, ok bool) {
	deadline := time.Now().Add(timeout)
	for {
		state, reason = c.NodeState()
		if slices.Contains(states, state) {
			return state, reason, true
		}
		if time.Now().After(deadline) {
			return state, reason, false
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// NodeInfo is `scontrol show node -o` as a map (State=IDLE+DRAIN, Reason=...,
// Gres=, CfgTRES=, ...).
func (c *Cluster) NodeInfo() (map[string]string, error) {
	out, _, err := c.Run(context.Background(), "scontrol", "show", "node", "-o", c.Node)
	if err != nil {
		return nil, err
	}
	return parseRecord(out), nil
}

// Resume puts a drained node back (scontrol update state=resume) and waits up
// to 10 s for it to be idle; it fails the test otherwise.
//
// After a failed prolog, slurmd registers again with ESLURMD_PROLOG_FAILED
// and slurmctld drains the node ("Prolog error") on that message unless it
// is drained already. When the prolog drained the node itself first
// (gpuprep's drain_reason), that message can arrive after the resume and
// undo it (seen in CI: re-drained 8 ms after the resume, and 38 ms after,
// between two looks at the node, so that it never looked idle). So Resume
// resumes again, as an admin would, when the node drains with "Prolog
// error" while it waits for idle or in the second it watches the node
// after.
func (c *Cluster) Resume() {
	c.t.Helper()
	if c.resume() {
		return
	}
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if st, reason := c.NodeState(); lateRedrain(st, reason) {
			c.t.Logf("slurmharness: node %s drained again by the failed prolog's late registration; resuming again", c.Node)
			c.resume()
			return
		}
	}
}

// lateRedrain says the node was drained by a failed prolog's late
// registration: slurmctld's own "Prolog error" reason.
func lateRedrain(state, reason string) bool {
	return strings.HasPrefix(state, "drain") && reason == "Prolog error"
}

// resume resumes the node and waits up to 10 s for it to be idle; a drain
// by the late registration on the way is resumed once more (again says
// so). Any other state at the end fails the test.
func (c *Cluster) resume() (again bool) {
	c.t.Helper()
	resume := func() {
		if _, _, err := c.Run(context.Background(), "scontrol", "update", "nodename="+c.Node, "state=resume"); err != nil {
			c.t.Fatalf("slurmharness: resume: %v", err)
		}
	}
	resume()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, reason := c.NodeState()
		switch {
		case st == "idle":
			return again
		case lateRedrain(st, reason) && !again:
			c.t.Logf("slurmharness: node %s drained again by the failed prolog's late registration before it looked idle; resuming again", c.Node)
			resume()
			again = true
		case time.Now().After(deadline):
			c.t.Fatalf("slurmharness: node %s after resume: %s (%s)\n%s", c.Node, st, reason, c.logTails(20))
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// SlurmdG runs `slurmd -G -f CONF`, which parses slurm.conf and gres.conf,
// prints the GRES it found (to stderr, one "Gres Name=..." line each) and
// exits; it returns stdout and stderr together. slurmd waits about 19 s for a
// missing File= before it fails.
func (c *Cluster) SlurmdG() (string, error) {
	slurmd, err := lookPath("slurmd")
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), DefaultTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, slurmd, "-G", "-f", c.Conf)
	cmd.Env = c.baseEnv
	cmd.Dir = c.Dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		err = fmt.Errorf("slurmd -G: %w", err)
	}
	return string(out), err
}

// WriteFile writes content to name inside the cluster folder (folders made as
// needed, mode 0644) and returns its path.
func (c *Cluster) WriteFile(name, content string) string {
	c.t.Helper()
	return c.write(name, content, 0o644)
}

// WriteScript is WriteFile with mode 0755, for hooks and job scripts.
func (c *Cluster) WriteScript(name, content string) string {
	c.t.Helper()
	return c.write(name, content, 0o755)
}

func (c *Cluster) write(name, content string, mode os.FileMode) string {
	c.t.Helper()
	p := name
	if !filepath.IsAbs(p) {
		p = filepath.Join(c.Dir, name)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		c.t.Fatalf("slurmharness: %v", err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		c.t.Fatalf("slurmharness: %v", err)
	}
	if err := os.Chmod(p, mode); err != nil {
		c.t.Fatalf("slurmharness: %v", err)
	}
	return p
}
