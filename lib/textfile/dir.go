package textfile

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"

	"gpuprep/lib/config"
	"gpuprep/lib/host"
	"gpuprep/lib/state"
	"gpuprep/lib/textfiledir"
)

// metricsWarnedFile is the spool file that remembers, for the current boot
// (/proc/sys/kernel/random/boot_id) and metrics_dir setting, that the
// missing textfile directory was warned about: the hooks run for every job,
// and an on-call person wants the line once, not per job. The spool is
// root's own directory, opened without following symlinks (lib/state).
const metricsWarnedFile = "metrics-dir-warned.json"

// metricsWarned is metricsWarnedFile's content.
type metricsWarned struct {
	BootID  string `json:"boot_id"`
	Setting string `json:"metrics_dir"`
}

// metricsDir is the directory (a path on this machine) to write gpuprep-<writer>.prom
// into, or "" for none: general.metrics_dir "" is none; "auto" is what
// textfiledir.Find finds under r (the source named in a debug line); any
// other value is that path, when it is a directory. When there is none to
// write into, one warning says what was tried and how to set metrics_dir,
// once per boot and setting (metricsWarnedFile); later runs log it at debug.
func metricsDir(r host.Root, cfg *config.Config, sp *state.Spool, log *slog.Logger) string {
	setting := cfg.General.MetricsDir
	var tried []string
	switch setting {
	case "":
		return ""
	case config.MetricsDirAuto:
		res := textfiledir.Find(r)
		if res.Dir != "" {
			log.Debug("metrics: node_exporter textfile directory", "dir", res.Dir, "source", res.Source)
			forgetMetricsWarning(sp, log)
			return r.Path(res.Dir)
		}
		tried = res.Tried
	default:
		fi, err := os.Stat(setting)
		switch {
		case err == nil && fi.IsDir():
			forgetMetricsWarning(sp, log)
			return setting
		case err == nil:
			tried = []string{setting + ": not a directory"}
		case errors.Is(err, fs.ErrNotExist):
			tried = []string{setting + ": absent"}
		default:
			tried = []string{err.Error()}
		}
	}
	file := cfg.File
	if file == "" || file == config.BuiltinFile {
		file = config.DefaultPath
	}
	const msg = "metrics not written: no node_exporter textfile directory"
	attrs := []any{"metrics_dir", setting, "tried", strings.Join(tried, "; "),
		"fix", fmt.Sprintf("set general.metrics_dir in %s to the directory node_exporter's %s names (gpuprep does not create it), or to \"\" for no metrics", file, textfiledir.Flag)}
	switch warned, once := warnedThisBoot(r, sp, setting, log); {
	case warned:
		log.Debug(msg, attrs...)
	case once:
		log.Warn(msg+" (said once per boot)", attrs...)
	default:
		log.Warn(msg, attrs...)
	}
	return ""
}

// warnedThisBoot says whether the warning for setting was given in this
// boot, and records that it now is (once: it could be recorded). Without a
// boot id (a fixture root lacking /proc/sys/kernel/random/boot_id) every
// run warns.
func warnedThisBoot(r host.Root, sp *state.Spool, setting string, log *slog.Logger) (warned, once bool) {
	boot, err := host.ReadBootID(r)
	if err != nil {
		log.Debug("metrics: cannot tell boots apart, warning every run", "err", err)
		return false, false
	}
	now := metricsWarned{BootID: boot, Setting: setting}
	var was metricsWarned
	if found, err := sp.ReadJSON(metricsWarnedFile, &was); found && err == nil && was == now {
		return true, true
	}
	if err := sp.WriteJSON(metricsWarnedFile, now); err != nil {
		log.Debug("metrics: warning not remembered", "err", err)
		return false, false
	}
	return false, true
}

// forgetMetricsWarning removes metricsWarnedFile once a directory is there,
// so that losing it again is warned about again.
func forgetMetricsWarning(sp *state.Spool, log *slog.Logger) {
	var was metricsWarned
	if found, _ := sp.ReadJSON(metricsWarnedFile, &was); !found {
		return
	}
	if err := sp.Remove(metricsWarnedFile); err != nil {
		log.Debug("metrics: warning mark not removed", "err", err)
	}
}
