package healthcmd

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"gpuprep/lib/cli"
	"gpuprep/lib/health"
)

// explainProgram is gpuprep-health --explain CODE: what the code of a
// failure means and what to do about it; "list" lists every code with a
// fixed name and every Xid of NVIDIA's catalog. It reads no config and
// touches nothing: anyone may run it. An unknown code is bad input (2).
func explainProgram(prog, code string, stdout, stderr io.Writer) int {
	if strings.EqualFold(code, "list") {
		writeCodes(stdout)
		return cli.ExitOK
	}
	text, ok := health.Explain(code)
	if !ok {
		return cli.Fail(stderr, prog, cli.ExitBadInput,
			fmt.Errorf("--explain %q: no such code (gpuprep-health --explain list lists them)", code))
	}
	fmt.Fprint(stdout, text)
	return cli.ExitOK
}

// writeCodes is the table of --explain list: code, check, action, meaning.
func writeCodes(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CODE\tCHECK\tACTION\tMEANS")
	for _, c := range health.Codes() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Name, c.Check, c.Action, c.Means)
	}
	for _, x := range health.XIDCatalog() {
		c, _ := health.CodeOf(fmt.Sprintf("XID%d", x.XID))
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Name, c.Check, c.Action, c.Means)
	}
	tw.Flush()
}
