package healthcmd

import (
	"errors"
	"fmt"
	"io"

	"gpuprep/lib/cli"
	"gpuprep/lib/probefleet"
)

// probeReportProgram is gpuprep-health --probe-report PATH...: the
// fleet-relative report over many nodes' saved verdicts (copies of each
// node's probe-verdict.json, or folders of them): per GPU model, the GPUs
// and nodes below the fleet's median by more than --margin and by more
// than 3 robust deviations (median and MAD). It reads files only: anyone
// may run it anywhere. Exit 0: nothing flagged; 1: a GPU flagged; 2: no
// verdict could be read.
func probeReportProgram(prog string, f *healthFlags, stdout, stderr io.Writer) int {
	nodes, errs := probefleet.Read(f.probeReport)
	for _, err := range errs {
		if errors.Is(err, probefleet.ErrDuplicate) {
			fmt.Fprintf(stderr, "%s: note: %v\n", prog, err)
			continue
		}
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
	}
	if len(nodes) == 0 {
		return cli.Fail(stderr, prog, cli.ExitBadInput, errors.New("--probe-report: no verdict could be read"))
	}
	r := probefleet.Build(nodes, probefleet.Options{Margin: f.margin})
	if f.common.JSON {
		cli.WriteJSON(stdout, r)
	} else if err := probefleet.WriteText(stdout, r); err != nil {
		return cli.Fail(stderr, prog, cli.ExitMismatch, err)
	}
	if len(r.Flags) > 0 {
		return cli.ExitMismatch
	}
	return cli.ExitOK
}
