package hookcmd

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"

	"gpuprep/lib/cli"
	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
	"gpuprep/lib/health"
	"gpuprep/lib/plural"
	"gpuprep/lib/state"
)

// healthCheck is `gpuprep-prolog --health [--json]`: the prolog's health
// checks on every GPU, read-only (the spool's XID watermark and debounce
// counts are read, never moved; no lock, log file or metrics), printed as a
// table or JSON. Exit 0 when no check is fatal, 1 when one is, 2 on bad
// input. With --gpu-backend procfs the checks that need NVML are skipped
// and say so.
func healthCheck(prog string, f *flags, cfg *config.Config, stdout, stderr io.Writer) int {
	models, err := health.LoadModels(cfg.Health.ModelFile)
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitBadInput, err)
	}
	backend, err := f.common.OpenGPU(cfg)
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitBadInput, err)
	}
	gpu.Light(backend)
	dir := f.stateDir
	if dir == "" {
		dir = cfg.General.StateDir
	}
	sp, err := state.OpenReadOnly(dir)
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitMismatch, err) // it names the state dir
	}
	defer sp.Close()
	deadline := runDeadline(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	rep, err := health.Run(ctx, health.Options{Op: "health", Root: f.common.HostRoot(), GPU: backend, Health: cfg.Health,
		Models: models, Spool: sp, ReadOnly: true})
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitMismatch, err)
	}
	if f.common.JSON {
		cli.WriteJSON(stdout, rep)
	} else {
		writeHealthTable(stdout, rep)
	}
	if len(rep.Fatal()) > 0 {
		return cli.ExitMismatch
	}
	return cli.ExitOK
}

// writeHealthTable prints a health report: one row per check and scope.
func writeHealthTable(w io.Writer, rep *health.Report) {
	fmt.Fprintf(w, "health (read-only): GPU backend %s, %d GPUs, %s\n", rep.Backend, rep.GPUs, rep.Summary())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tSCOPE\tSTATUS\tDETAIL")
	for _, r := range rep.Results {
		status := string(r.Status)
		if r.Severity != "" {
			status += " (" + r.Severity + ")"
		}
		detail := r.Value
		if r.Reason != "" {
			detail = r.Reason
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Check, r.Scope, status, detail)
	}
	tw.Flush()
	for _, bus := range slices.Sorted(maps.Keys(rep.History)) {
		for _, x := range rep.History[bus] {
			fmt.Fprintf(w, "XID history %s: Xid %d (%s), %s, seq %d to %d, last: %s\n", bus, x.Code, x.Severity, plural.Count(int(x.Count), "time", "times"), x.FirstSeq, x.LastSeq, x.Text)
		}
	}
}
