package checkconfig

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"gpuprep/lib/cli"
	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
	"gpuprep/lib/health"
	"gpuprep/lib/hook"
	"gpuprep/lib/plural"
)

// The checks of --check-config that compare the configuration with this
// node, as a prolog here would judge them, read-only: the [mig] layout of
// each GPU and the health checks.

// checkNodeMIG prints the [mig] layout check of every GPU of this node
// (hook.CheckNodeMIG, the prolog's own check) and returns 1 when a GPU's
// layout is not the one [mig.layout] (or this node's [mig.nodes]) wants
// and [mig] reconfigure is off: the prolog of a job on that GPU fails and
// Slurm drains the node. Each [mig.partitions] layout is checked too, for a
// job in that partition; this node may not be in it, so a mismatch there
// is printed without changing the exit code.
func checkNodeMIG(cfg *config.Config, b gpu.Backend, node string, w io.Writer) int {
	if !cfg.MIG.Configured() {
		return cli.ExitOK
	}
	if b.Name() == "none" {
		fmt.Fprintln(w, "mig: MIG layout not checked: the GPU backend none lists no GPU")
		return cli.ExitOK
	}
	checks, warns, err := hook.CheckNodeMIG(cfg, b, node, "")
	if err != nil && len(checks) == 0 {
		fmt.Fprintf(w, "MIG layout not checked: %v\n", err)
		return cli.ExitOK
	}
	for _, s := range warns {
		fmt.Fprintln(w, "mig: warning: "+s)
	}
	writeMIGChecks(w, checks)
	if len(checks) == 0 && len(warns) == 0 {
		fmt.Fprintf(w, "mig: [mig] gives no layout for any GPU of this node (%s)\n", node)
	}
	code := cli.ExitOK
	if bad := mismatched(checks, ""); len(bad) > 0 {
		gpus, them := gpuList(bad), plural.Word(len(bad), "it", "them")
		if cfg.MIG.Reconfigure && !slices.ContainsFunc(checks, func(c hook.MIGCheck) bool { return c.Unreadable }) {
			fmt.Fprintf(w, "MIG layout differs on %s: the prolog of a job on %s reconfigures %s when no other job holds %s and no process uses %s ([mig] reconfigure = true), else it fails and Slurm drains this node\n", gpus, them, them, them, them)
		} else {
			fmt.Fprintf(w, "MIG layout differs on %s: the prolog of a job on %s fails and Slurm drains this node (change the layout, or set [mig] reconfigure = true)\n", gpus, them)
			code = cli.ExitMismatch
		}
	}
	for _, p := range slices.Sorted(maps.Keys(cfg.MIG.Partitions)) {
		checks, _, _ := hook.CheckNodeMIG(cfg, b, node, p)
		from := "mig.partitions." + p
		writeMIGChecks(w, slices.DeleteFunc(checks, func(c hook.MIGCheck) bool { return c.From != from }))
		if bad := mismatched(checks, from); len(bad) > 0 {
			fmt.Fprintf(w, "MIG layout differs from [mig.partitions.%s] on %s: if this node is in partition %s, the prolog of a job there on %s fails and Slurm drains this node\n",
				p, gpuList(bad), p, plural.Word(len(bad), "it", "them"))
		}
	}
	return code
}

// mismatched lists the indexes of the GPUs whose check failed, of those
// whose layout came from table from ("" any).
func mismatched(checks []hook.MIGCheck, from string) []string {
	var bad []string
	for _, c := range checks {
		if !c.OK && (from == "" || c.From == from) {
			bad = append(bad, strconv.Itoa(c.GPU))
		}
	}
	return bad
}

// gpuList is "GPU 3" or "GPUs 0, 1".
func gpuList(indexes []string) string {
	return plural.Word(len(indexes), "GPU ", "GPUs ") + strings.Join(indexes, ", ")
}

// writeMIGChecks prints GPUs' MIG checks with the table each layout came
// from: a line per mismatch ("mig: MIG mismatch on GPU 0 (0000:18:00.0):
// want 2x3g.40gb, found MIG disabled ([mig.layout])"), and the GPUs that
// match grouped by layout ("mig: GPUs 2, 3 ok: MIG disabled ([mig.layout])").
func writeMIGChecks(w io.Writer, checks []hook.MIGCheck) {
	var okLines []string
	okGPUs := map[string][]string{}
	for _, c := range checks {
		if !c.OK {
			fmt.Fprintf(w, "mig: %s (%s)\n", c.Reason, migTable(c.From))
			continue
		}
		line := fmt.Sprintf("ok: %s (%s)", c.Want, migTable(c.From))
		if c.ProfilesUnverified {
			line += "; mode and device count only, profiles not verified"
		}
		if okGPUs[line] == nil {
			okLines = append(okLines, line)
		}
		okGPUs[line] = append(okGPUs[line], strconv.Itoa(c.GPU))
	}
	for _, line := range okLines {
		fmt.Fprintf(w, "mig: %s %s\n", gpuList(okGPUs[line]), line)
	}
}

// migTable names the [mig] table a layout came from (MIGCheck.From).
func migTable(from string) string {
	switch {
	case strings.HasPrefix(from, "mig.nodes."):
		return fmt.Sprintf("[mig.nodes.%q.layout]", strings.TrimPrefix(from, "mig.nodes."))
	case strings.HasPrefix(from, "mig.partitions."):
		return "[" + from + ".layout]"
	}
	return "[mig.layout]"
}

// checkNodeHealth runs the prolog's health checks on every GPU of this
// node, read-only and without the spool (debounce counts start afresh;
// XIDs, events rather than configuration, are left out), prints the
// failures, and returns 1 when one is fatal: a prolog that meets it fails
// (a node check: every job's; a GPU's: a job's on that GPU) and Slurm
// drains the node.
func checkNodeHealth(c *cli.Common, cfg *config.Config, b gpu.Backend, models health.Models, w io.Writer) int {
	h := cfg.Health
	if !h.Prolog {
		fmt.Fprintln(w, "health: the prolog runs no health checks ([health] prolog = false)")
		return cli.ExitOK
	}
	h.Severity = maps.Clone(h.Severity)
	if h.Severity == nil {
		h.Severity = map[string]string{}
	}
	h.Severity["xid"] = config.HealthOff
	deadline := cli.Deadline(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	rep, err := health.Run(ctx, health.Options{Op: "prolog", Root: c.HostRoot(), GPU: b, Health: h, Models: models, ReadOnly: true})
	if err != nil {
		fmt.Fprintf(w, "health: checks not run: %v\n", err)
		return cli.ExitMismatch
	}
	fmt.Fprintf(w, "health: the prolog's checks on every GPU (GPU backend %s, XIDs left out): %s\n", rep.Backend, rep.Summary())
	for _, r := range rep.Results {
		if r.Status == health.Fail {
			fmt.Fprintln(w, "health: "+r.Line())
		}
	}
	if len(rep.Fatal()) > 0 {
		fmt.Fprintln(w, "health: a prolog that meets a fatal failure fails (a node check: every job's; a GPU check: a job's on that GPU) and Slurm drains this node")
		return cli.ExitMismatch
	}
	return cli.ExitOK
}
