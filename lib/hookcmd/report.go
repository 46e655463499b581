package hookcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"gpuprep/lib/cli"
	"gpuprep/lib/config"
	"gpuprep/lib/drift"
	"gpuprep/lib/evidence"
	"gpuprep/lib/fleet"
)

// report is gpuprep-epilog --report: the drift history of this node's
// spool (opened read-only), as a table or JSON.
func report(op, prog string, f *flags, cfg *config.Config, logs *cli.Logs, stdout, stderr io.Writer) int {
	sp, code, err := openSpool(f, cfg)
	if err != nil {
		return failer(logs.Daemon, op, prog, stderr)(code, err)
	}
	defer sp.Close()
	recs, skipped, err := drift.Read(sp, sinceTime(f))
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

// sinceTime is --since as a time: zero (every record) when not given.
func sinceTime(f *flags) time.Time {
	if f.since <= 0 {
		return time.Time{}
	}
	return time.Now().Add(-f.since)
}

// fleetFlags are --report's fleet flags: --from (the drift files of many
// nodes) and --top; fs is the parsed flag set, for the arguments left over.
type fleetFlags struct {
	from []string
	top  int
	fs   *pflag.FlagSet
}

// asked says whether --from or --top was given: the fleet report, or a
// usage error, and never the spool.
func (ff *fleetFlags) asked() bool {
	return len(ff.from) > 0 || ff.fs != nil && ff.fs.Changed("top")
}

// fleetReport is gpuprep-epilog --report --from PATH...: one summary of the
// drift files PATH names (fleet.Files) and of the job evidence records
// among them (evidence.Fleet: each GPU's share of job time throttled, its
// energy per GPU-hour), as tables or JSON. It opens no spool. A PATH that
// does not exist, or a set of PATHs naming neither drift files nor
// evidence, is bad input (exit 2); unreadable lines and records are
// skipped, with warnings on stderr.
func fleetReport(ctx context.Context, f *flags, stdout, stderr io.Writer, prog string) int {
	bad := func(err error) int { return cli.Fail(stderr, prog, cli.ExitBadInput, err) }
	switch {
	case !f.report:
		return bad(errors.New("--from and --top go with --report"))
	case len(f.fleet.from) == 0:
		return bad(errors.New("--top goes with --from"))
	case f.fleet.top < 0:
		return bad(fmt.Errorf("--top %d: want 0 (every node) or more", f.fleet.top))
	}
	if args := f.fleet.fs.Args(); len(args) > 0 {
		// A shell glob after one --from (--from fleet/*) names the rest
		// without it: refuse rather than leave those nodes out.
		return bad(fmt.Errorf("unexpected argument %q: give each path its own --from", args[0]))
	}
	recs := readFleetEvidence(f, stderr, prog)
	fl, err := fleet.Read(ctx, f.fleet.from, sinceTime(f))
	switch {
	case err != nil && len(recs) == 0:
		return bad(fmt.Errorf("--from %w", err))
	case err != nil:
		fmt.Fprintf(stderr, "%s: warning: no drift summary: --from %v\n", prog, err)
		fl = &fleet.Fleet{}
	}
	rep := fl.Report(f.fleet.top)
	for _, file := range rep.Files {
		if file.Skipped.Total() > 0 {
			fmt.Fprintf(stderr, "%s: warning: %s\n", prog, file.Skipped.In(file.Path))
		}
	}
	rep.JobGPUs = evidence.Fleet(recs)
	if f.common.JSON {
		err = fleet.WriteReportJSON(stdout, rep)
	} else {
		err = writeFleetText(stdout, rep, f.fleet.top)
	}
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitMismatch, err)
	}
	return cli.ExitOK
}

// writeFleetText is the fleet report as tables: the drift summary, then
// (where --from held job evidence) the GPUs that throttled jobs most.
func writeFleetText(w io.Writer, rep fleet.Report, top int) error {
	if err := fleet.WriteReport(w, rep); err != nil {
		return err
	}
	if len(rep.JobGPUs) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	return evidence.WriteFleet(w, rep.JobGPUs, top)
}
