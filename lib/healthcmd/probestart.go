package healthcmd

import (
	"log/slog"
	"os"
	"os/exec"
	"syscall"
	"time"

	"gpuprep/lib/config"
	"gpuprep/lib/health"
	"gpuprep/lib/probe"
	"gpuprep/lib/state"
)

// startProbe starts `gpuprep-health --probe` in the background when
// [health] probe_every is set, Slurm shows the node idle (or drained by
// gpuprep for a probe's finding, so a repaired node comes back by itself),
// and the verdict is older than probe_every, unknown or missing. The probe
// runs in a session of its own, so slurmd's 60 s limit on
// HealthCheckProgram does not end it; ProbeLock keeps two apart.
func startProbe(f *healthFlags, cfg *config.Config, sp *state.Spool, run *healthRun, log *slog.Logger) {
	if !probeDue(f, cfg, sp, run) {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		log.Warn("probe not started: this program's path is unknown", "err", err)
		return
	}
	args := []string{"--probe", "--config", f.common.ConfigPath, "--root", f.common.Root, "--state-dir", stateDir(f, cfg), "--node", run.Node}
	if f.common.GPUBackend != "" {
		args = append(args, "--gpu-backend", f.common.GPUBackend)
	}
	pid, err := startDetached(exe, args)
	if err != nil {
		log.Warn("probe not started", "err", err)
		return
	}
	log.Info("probe started in the background", "pid", pid, "every", cfg.Health.ProbeEvery)
}

// startDetached starts exe with args in a session of its own, its output
// thrown away (it logs), and does not wait for it; a test records the call
// instead.
var startDetached = func(exe string, args []string) (int, error) {
	cmd := exec.Command(exe, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	pid := cmd.Process.Pid
	return pid, cmd.Process.Release()
}

// probeDue says whether a background probe should start now.
func probeDue(f *healthFlags, cfg *config.Config, sp *state.Spool, run *healthRun) bool {
	switch {
	case cfg.Health.ProbeEvery == 0, f.noDrain, f.probe, f.dryRun, run.probing, !run.Idle, run.nsErr != nil:
		return false
	case run.Done && run.Decision.Action == health.Drain:
		return false // drained for another finding just now
	case run.ns.Drained() && !health.ProbeDrain(run.ns.Reason) && run.ns.Reason != ProbingReason:
		return false // an admin's drain, or gpuprep's for another finding
	}
	h := run.Health
	if h == nil || h.Probe == "" {
		return verdictDue(sp, cfg.Health.ProbeEvery) // the probe check did not run
	}
	if h.ProbeTime == nil {
		return true // never probed
	}
	return h.Probe != probe.StatusPass && h.Probe != probe.StatusFail ||
		time.Since(*h.ProbeTime) >= cfg.Health.ProbeEvery
}

// verdictDue reads the saved verdict's header (health.ReadVerdict) where
// the health checks did not: a probe is due when there is none, or it is
// older than every; not when it cannot be read.
func verdictDue(sp *state.Spool, every time.Duration) bool {
	v, err := health.ReadVerdict(sp)
	if err != nil || v == nil {
		return err == nil
	}
	return time.Since(v.Time) >= every
}
