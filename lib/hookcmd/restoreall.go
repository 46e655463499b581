package hookcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"gpuprep/lib/cli"
	"gpuprep/lib/config"
	"gpuprep/lib/hook"
	"gpuprep/lib/slurm"
)

// The epilog's node-wide modes, which run for no job: --held (what holds
// settings; the package's removal asks it) and --restore-all [--force]
// (put the node back at its baseline before gpuprep is removed).

// heldExit is --held's exit code when something holds settings: the
// package's pre-removal script refuses the removal on it.
const heldExit = 1

// nodeModeFlags refuses --force without --restore-all, and --held or
// --restore-all with another mode.
func nodeModeFlags(f *flags) error {
	switch {
	case f.force && !f.restoreAll:
		return errors.New("--force goes with --restore-all")
	case f.held && f.restoreAll:
		return errors.New("--held and --restore-all are two modes: give one")
	case (f.held || f.restoreAll) && (f.report || f.job != "" || f.fleet.asked()):
		return errors.New("--held and --restore-all do not go with --report")
	}
	return nil
}

// held prints what holds settings on this node, read only (no lock), and
// exits 0 when nothing does, 1 when something does, 2 when the spool
// cannot be read.
func held(prog string, f *flags, cfg *config.Config, stdout, stderr io.Writer) int {
	sp, _, err := openSpool(f, cfg)
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitBadInput, err)
	}
	defer sp.Close()
	h, err := hook.Held(sp)
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitBadInput, fmt.Errorf("reading what holds settings: %w", err))
	}
	if f.common.JSON {
		cli.WriteJSON(stdout, h)
	} else {
		writeHeld(stdout, h)
	}
	if h.Any() {
		return heldExit
	}
	return cli.ExitOK
}

// writeHeld prints Held as a table, or says nothing holds settings.
func writeHeld(w io.Writer, h hook.Holding) {
	if !h.Any() {
		fmt.Fprintln(w, "nothing holds settings: the node is at its baseline")
		return
	}
	if h.Interrupted {
		fmt.Fprintln(w, "an interrupted gpuprep run (its journal): the next prolog, epilog or --restore-all finishes it")
	}
	if len(h.Jobs) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tUSER\tSINCE\tHOLDS")
	for _, j := range h.Jobs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", j.Job, j.User, j.Since, strings.Join(j.Knobs, ", "))
	}
	tw.Flush()
}

// restoreAll is --restore-all: under the node lock and the run's deadline
// it releases every job that is over and, with --force, every other one,
// so each setting goes back to its baseline (hook.RestoreAll). It prints
// what it did; it never drains the node (no job is at stake) and writes
// no metrics.
func restoreAll(ctx context.Context, prog string, f *flags, cfg *config.Config, logs *cli.Logs, stdout io.Writer, fail func(int, error, ...any) int) int {
	sp, code, err := openSpool(f, cfg)
	if err != nil {
		return fail(code, err)
	}
	defer sp.Close()
	o, err := hookOptions(f, cfg, sp, slurm.Job{}, logs, time.Now())
	if err != nil {
		return fail(cli.ExitBadInput, err)
	}
	done, err := prepareEngine(ctx, f, sp, o)
	if err != nil {
		return fail(cli.ExitMismatch, err)
	}
	defer done()
	out, runErr := hook.RestoreAll(ctx, o, f.force)
	logOutcome(o.Log, out, runErr)
	printRestoreAll(stdout, out, f.common.JSON)
	if runErr == nil {
		return cli.ExitOK
	}
	if hook.IsNodeError(runErr) {
		return fail(cli.ExitMismatch, runErr)
	}
	return fail(cli.ExitBadInput, runErr)
}

// printRestoreAll prints what --restore-all released and restored.
func printRestoreAll(w io.Writer, out *hook.Outcome, asJSON bool) {
	if asJSON {
		cli.WriteJSON(w, out)
		return
	}
	for _, r := range out.Released {
		fmt.Fprintln(w, describeReleased(r, out.DryRun))
	}
	for _, wn := range out.Warnings {
		fmt.Fprintf(w, "warning: %s\n", wn)
	}
	if len(out.Released) == 0 {
		fmt.Fprintln(w, "no job held settings: nothing to restore")
	}
}
