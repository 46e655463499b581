// Command topocheck compares gpuprep's reading of a GPU node with
// `nvidia-smi topo -m`, NVIDIA's own view of it, so that a run on a real
// node (issue 11) checks gpuprep automatically. It is built without cgo
// (CGO_ENABLED=0 go build ./test/topocheck) and needs no Go on the node:
//
//	nvidia-smi topo -m > topo-m.txt
//	gpuprep-gres --format json > gres.json
//	srunwrap --explain --json > explain.json
//	topocheck gres --topo topo-m.txt --gres gres.json
//	topocheck ranks --topo topo-m.txt --explain explain.json --gres gres.json
//
// Each mode prints one line per mismatch, notes on what it could not check,
// and a summary line; it exits 0 when everything agrees, 1 on a mismatch
// and 2 when an input cannot be read.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"gpuprep/internal/topom"
	"gpuprep/lib/cmdenv"
)

const prog = "topocheck"

const synopsis = `usage: topocheck gres --topo topo-m.txt --gres gres.json
       topocheck ranks --topo topo-m.txt --explain explain.json [--gres gres.json]

Compares gpuprep with nvidia-smi topo -m (the file --topo). gres: the output
of gpuprep-gres --format json: one gres device per GPU, Links= equal to the
NV# counts, the CPUs of Cores= equal to the CPU Affinity, the GPU's NUMA node
equal to the NUMA Affinity, its nearest NICs (and their PCIe level) equal to
topo -m's. ranks: the output of srunwrap --explain --json:
every rank on a GPU, GPUs shared evenly, CPUs within the GPU's CPU Affinity
and disjoint, memory bound to the NUMA Affinity, HCAs among the GPU's nearest
NICs; with --gres also whole cores. Exit 0: all agree; 1: a mismatch; 2: an
input cannot be read.`

func main() { os.Exit(run(cmdenv.OS())) }

// report collects mismatch and note lines.
type report struct {
	mismatches []string
	notes      []string
}

func (r *report) bad(format string, a ...any) {
	r.mismatches = append(r.mismatches, fmt.Sprintf(format, a...))
}
func (r *report) note(format string, a ...any) { r.notes = append(r.notes, fmt.Sprintf(format, a...)) }

// print writes the mismatches, the notes and the summary, and returns the
// exit code.
func (r *report) print(w io.Writer, mode, what string) int {
	for _, l := range r.mismatches {
		fmt.Fprintln(w, l)
	}
	for _, l := range r.notes {
		fmt.Fprintln(w, "note: "+l)
	}
	if len(r.mismatches) == 0 {
		fmt.Fprintf(w, "%s %s: %s, all agree\n", prog, mode, what)
		return cmdenv.ExitOK
	}
	fmt.Fprintf(w, "%s %s: %s, %s\n", prog, mode, what, plural(len(r.mismatches), "mismatch", "mismatches"))
	return cmdenv.ExitMismatch
}

func run(e cmdenv.Env) int {
	if len(e.Args) == 0 {
		fmt.Fprintln(e.Stderr, synopsis)
		return cmdenv.ExitBadInput
	}
	mode, args := e.Args[0], e.Args[1:]
	switch mode {
	case "-h", "--help":
		fmt.Fprintln(e.Stdout, synopsis)
		return cmdenv.ExitOK
	case "--version":
		fmt.Fprintf(e.Stdout, "%s %s\n", prog, cmdenv.Version)
		return cmdenv.ExitOK
	case "gres", "ranks":
	default:
		return cmdenv.Fail(e.Stderr, prog, cmdenv.ExitBadInput, fmt.Errorf("unknown mode %q: want gres or ranks (see -h)", mode))
	}
	var topoPath, gresPath, explainPath string
	fs := cmdenv.NewFlagSet(prog+" "+mode, synopsis, e.Stderr)
	fs.StringVar(&topoPath, "topo", "", "the output of nvidia-smi topo -m")
	fs.StringVar(&gresPath, "gres", "", "the output of gpuprep-gres --format json")
	if mode == "ranks" {
		fs.StringVar(&explainPath, "explain", "", "the output of srunwrap --explain --json")
	}
	if done, code := cmdenv.Parse(fs, nil, args, e.Stdout); done {
		return code
	}
	if err := required(fs, mode); err != nil {
		return cmdenv.Fail(e.Stderr, prog, cmdenv.ExitBadInput, err)
	}
	m, err := readTopo(topoPath)
	if err != nil {
		return cmdenv.Fail(e.Stderr, prog, cmdenv.ExitBadInput, err)
	}
	var g *gresFile
	if gresPath != "" {
		if g, err = readGres(gresPath); err != nil {
			return cmdenv.Fail(e.Stderr, prog, cmdenv.ExitBadInput, err)
		}
	}
	var r report
	if mode == "gres" {
		checkGres(&r, m, g)
		return r.print(e.Stdout, mode, plural(len(m.GPUs), "GPU", "GPUs"))
	}
	x, err := readExplain(explainPath)
	if err != nil {
		return cmdenv.Fail(e.Stderr, prog, cmdenv.ExitBadInput, err)
	}
	checkRanks(&r, m, x, g)
	return r.print(e.Stdout, mode, fmt.Sprintf("%s on %s", plural(len(x.Ranks), "rank", "ranks"), plural(len(m.GPUs), "GPU", "GPUs")))
}

// required checks that the mode's file flags are set.
func required(fs *pflag.FlagSet, mode string) error {
	need := []string{"topo", "gres"}
	if mode == "ranks" {
		need = []string{"topo", "explain"}
	}
	for _, n := range need {
		if fs.Lookup(n).Value.String() == "" {
			return fmt.Errorf("%s: --%s is required (see -h)", mode, n)
		}
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected argument %q", mode, fs.Arg(0))
	}
	return nil
}

// readTopo reads and parses an nvidia-smi topo -m text.
func readTopo(path string) (*topom.Matrix, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m, err := topom.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(m.GPUs) == 0 {
		return nil, errors.New(path + ": no GPUs")
	}
	return m, nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
