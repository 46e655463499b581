package hookcmd

import (
	"fmt"
	"io"
	"time"

	"gpuprep/lib/cli"
	"gpuprep/lib/drift"
	"gpuprep/lib/state"
)

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
