package metrics

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gpuprep/lib/drift"
	"gpuprep/lib/state"
)

// PromFile is the file hook's writer keeps in the textfile directory
// ("gpuprep-epilog.prom"): each writer has its own, so none overwrites
// another's figures, and no series is in two files.
func PromFile(hook string) string { return "gpuprep-" + hook + ".prom" }

// LegacyPromFile is the one textfile all writers shared before; a writer
// removes it, or node_exporter would report its series twice.
const LegacyPromFile = "gpuprep.prom"

// Metric names.
const (
	MetricDriftEvents = "gpuprep_drift_events_total"
	MetricRunDuration = "gpuprep_last_run_duration_seconds"
	MetricRunSuccess  = "gpuprep_last_run_success"
	MetricRunTime     = "gpuprep_last_run_timestamp_seconds"
	MetricDeadJobs    = "gpuprep_dead_jobs_released_total"
	MetricFallbacks   = "gpuprep_profile_fallbacks_total"
	MetricBuildInfo   = "gpuprep_build_info"
)

// Build is the gpuprep build that writes the metrics
// (gpuprep_build_info's labels): lib/cmdenv.Version and Commit.
type Build struct {
	Version string
	Commit  string // "" when not built from git
}

// Write writes hook's metrics m in the Prometheus text format to
// dir/PromFile(hook) (mode 0644, for node_exporter's textfile collector),
// atomically: a hidden temporary file in dir, fsync, rename, fsync dir. It
// then removes LegacyPromFile. dir must already exist (it is
// node_exporter's, not ours); the error is for the caller to log.
func Write(dir, hook string, node Node, m Metrics, b Build) error {
	if fi, err := os.Stat(dir); err != nil {
		return fmt.Errorf("metrics: textfile directory: %w", err)
	} else if !fi.IsDir() {
		return fmt.Errorf("metrics: textfile directory %s is not a directory", dir)
	}
	if err := state.WriteFileAtomic(dir, PromFile(hook), Format(hook, node, m, b), 0o644); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(dir, LegacyPromFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("metrics: remove the old %s: %w", LegacyPromFile, err)
	}
	return nil
}

// Node names the node whose metrics these are; every sample carries both
// names.
type Node struct {
	// Hostname is the host's name (os.Hostname): dcgm-exporter's label of
	// the same name, for joins with its series.
	Hostname string
	// SlurmName is the node's Slurm name (label slurm_node): the name
	// scontrol and sinfo take, which may differ from the host name
	// (slurm.NodeName).
	SlurmName string
}

// promBuf is the text being formatted, and the node every sample names.
type promBuf struct {
	bytes.Buffer
	node Node
}

// Format is hook's metrics m, and gpuprep_build_info for build, in
// the Prometheus text exposition format (0.0.4). Every sample carries
// hook="<hook>", so the writers' files never hold the same series, and
// the node's Hostname and slurm_node; the GPU families carry
// dcgm-exporter's GPU labels. Every family has its HELP and TYPE even
// with no samples yet.
func Format(hook string, node Node, m Metrics, build Build) []byte {
	b := promBuf{node: node}
	family(&b, MetricBuildInfo, "gauge", "Always 1; the labels name the gpuprep release (version) and git commit (commit, empty when unknown) of the writer (hook: prolog, epilog or health).")
	sample(&b, MetricBuildInfo, 1, "hook", hook, "version", build.Version, "commit", build.Commit)
	family(&b, MetricDriftEvents, "counter",
		"Drift records written on this node by gpuprep, by writer (hook), kind (drift: a knob changed under a job; invariant: a configured node invariant was broken) and knob.")
	for _, kind := range []string{drift.KindDrift, drift.KindInvariant} {
		counts := m.DriftEvents
		if kind == drift.KindInvariant {
			counts = m.InvariantEvents
		}
		for _, knob := range slices.Sorted(maps.Keys(counts)) {
			sample(&b, MetricDriftEvents, float64(counts[knob]), "hook", hook, "kind", kind, "knob", knob)
		}
	}
	family(&b, MetricDeadJobs, "counter",
		"Jobs whose settings gpuprep let go of because the job was over but its epilog never ran, by reason (reboot: the node rebooted; cgroup: Slurm's cgroup of the job is gone; age: older than general.max_job_age).")
	for _, reason := range slices.Sorted(maps.Keys(m.DeadJobs)) {
		sample(&b, MetricDeadJobs, float64(m.DeadJobs[reason]), "hook", hook, "reason", reason)
	}
	family(&b, MetricFallbacks, "counter",
		"Jobs that ran with another profile than the one they asked for (selection.unfit_profile), by the profile asked for.")
	for _, p := range slices.Sorted(maps.Keys(m.Fallbacks)) {
		sample(&b, MetricFallbacks, float64(m.Fallbacks[p]), "hook", hook, "profile", p)
	}
	hooks := slices.Sorted(maps.Keys(m.Runs))
	family(&b, MetricRunDuration, "gauge", "Wall time of the writer's last run, in seconds.")
	for _, h := range hooks {
		sample(&b, MetricRunDuration, m.Runs[h].Duration, "hook", h)
	}
	family(&b, MetricRunSuccess, "gauge", "1 if the writer's last run succeeded (exit 0), 0 if it failed.")
	for _, h := range hooks {
		ok := 0.0
		if m.Runs[h].OK {
			ok = 1
		}
		sample(&b, MetricRunSuccess, ok, "hook", h)
	}
	family(&b, MetricRunTime, "gauge", "When the writer's last run ended, in seconds since the Unix epoch.")
	for _, h := range hooks {
		sample(&b, MetricRunTime, float64(m.Runs[h].End.UnixMilli())/1000, "hook", h)
	}
	formatHealth(&b, hook, m)
	formatProbe(&b, hook, m)
	formatJobGPUs(&b, hook, m)
	return b.Bytes()
}

func family(b *promBuf, name, typ, help string) {
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n", name, escapeHelp(help), name, typ)
}

// nodeLabels are the labels naming the node: Hostname, slurm_node.
func (b *promBuf) nodeLabels() []string {
	return []string{"Hostname", b.node.Hostname, "slurm_node", b.node.SlurmName}
}

// hasLabel says whether the name, value pairs labels name the label.
func hasLabel(labels []string, name string) bool {
	for i := 0; i < len(labels); i += 2 {
		if labels[i] == name {
			return true
		}
	}
	return false
}

// sample writes one line; labels are name, value pairs, to which the
// node's labels (nodeLabels) are added at the end unless they are there
// (gpuLabels puts them before the GPU's, as dcgm-exporter orders them).
func sample(b *promBuf, name string, v float64, labels ...string) {
	if !hasLabel(labels, "Hostname") {
		labels = append(labels[:len(labels):len(labels)], b.nodeLabels()...)
	}
	b.WriteString(name)
	for i := 0; i+1 < len(labels); i += 2 {
		if i == 0 {
			b.WriteByte('{')
		} else {
			b.WriteByte(',')
		}
		fmt.Fprintf(b, "%s=\"%s\"", labels[i], escapeLabel(labels[i+1]))
	}
	if len(labels) > 0 {
		b.WriteByte('}')
	}
	b.WriteByte(' ')
	b.WriteString(formatValue(v))
	b.WriteByte('\n')
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

func escapeHelp(s string) string { return helpEscaper.Replace(strings.ToValidUTF8(s, "\uFFFD")) }

func escapeLabel(s string) string { return labelEscaper.Replace(strings.ToValidUTF8(s, "\uFFFD")) }

func formatValue(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}
