package hookcmd

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"gpuprep/lib/cli"
	"gpuprep/lib/config"
	"gpuprep/lib/drift"
	"gpuprep/lib/hook"
	"gpuprep/lib/state"
)

// writeMetrics updates the spool's counters (drift events by knob, this
// hook's last duration and status) and writes them to the node_exporter
// textfile directory. Called under the node lock; failures are only logged.
func writeMetrics(cfg *config.Config, sp *state.Spool, op string, d time.Duration, runErr error, out *hook.Outcome, log *slog.Logger) {
	if cfg.General.MetricsDir == "" {
		return
	}
	if fi, err := os.Stat(cfg.General.MetricsDir); err != nil || !fi.IsDir() {
		log.Debug("no metrics: textfile directory absent", "dir", cfg.General.MetricsDir)
		return
	}
	m, err := drift.LoadMetrics(sp)
	if err != nil {
		log.Warn("metrics state rebuilt", "err", err)
	}
	if out != nil && len(out.Drift) > 0 {
		recs := make([]drift.Record, len(out.Drift))
		for i, f := range out.Drift {
			recs[i] = drift.Record{Knob: f.ID.Name, Scope: f.ID.Scope, Kind: f.Kind}
		}
		m.AddDrift(recs)
	}
	if out != nil {
		for _, r := range out.Released {
			m.AddDeadJob(r.Kind)
		}
	}
	m.SetRun(op, time.Now(), d, runErr == nil)
	if err := drift.SaveMetrics(sp, m); err != nil {
		log.Warn("metrics state not saved", "err", err)
	}
	if removed, err := state.SweepTemps(cfg.General.MetricsDir, drift.PromFile); err != nil {
		log.Warn("sweeping temporary metrics files", "err", err)
	} else if len(removed) > 0 {
		log.Info("removed temporary metrics files of killed runs", "files", removed)
	}
	if err := drift.WriteMetrics(cfg.General.MetricsDir, m); err != nil {
		log.Warn("metrics not written", "dir", cfg.General.MetricsDir, "err", err)
	}
}

// report is gpuprep-epilog --report: the drift history, as a table or JSON.
func report(sp *state.Spool, f *flags, stdout, stderr io.Writer, prog string) int {
	var since time.Time
	if f.since > 0 {
		since = time.Now().Add(-f.since)
	}
	recs, skipped, err := drift.Read(sp, since)
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitBadInput, err)
	}
	if skipped.Total() > 0 {
		fmt.Fprintf(stderr, "%s: warning: %s\n", prog, skipped)
	}
	if f.common.JSON {
		err = drift.WriteReportJSON(stdout, recs)
	} else {
		err = drift.WriteReport(stdout, recs)
	}
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitMismatch, err)
	}
	return cli.ExitOK
}
