// Package grescmd is the command line of gpuprep-gres: its flags, which
// output to print, and --check's report and exit code. Discovering the node
// is lib/topo's, planning and writing gres.conf lib/gresgen's, and parsing an
// existing one lib/slurm's.
package grescmd

import (
	"fmt"
	"io"
	"os"

	"gpuprep/lib/cli"
	"gpuprep/lib/gresgen"
	"gpuprep/lib/plural"
	"gpuprep/lib/slurm"
	"gpuprep/lib/topo"
)

const synopsis = `usage: gpuprep-gres [flags]

Prints gres.conf for this node (default), the slurm.conf node line
(--format slurm), a table of GPU, NUMA, cores, NICs and NVLinks
(--format table), or all of it as JSON. --check FILE compares an existing
gres.conf with the hardware: exit 0 when it matches, 1 on a mismatch,
2 when it cannot be read or parsed.`

// Main is gpuprep-gres: it prints the node's gres.conf (GPUs and MIG devices
// with Slurm core ids and NVLink counts), its slurm.conf node line, a table
// or JSON, from the detected topology, or checks an existing gres.conf
// against the hardware. It returns the exit code: 0 done (or --check
// matches), 1 a --check mismatch, 2 bad input.
func Main(e cli.Env) int {
	const prog = "gpuprep-gres"
	stdout, stderr := e.Stdout, e.Stderr
	var c cli.Common
	var format, check, nodeName string
	var numaAsSocket, nodeNameLines bool
	fs := cli.NewFlagSet(prog, synopsis, stderr)
	fs.StringVar(&format, "format", "gres", "gres|slurm|table|json")
	fs.StringVar(&check, "check", "", "compare this gres.conf with the hardware (exit 1 on mismatch)")
	fs.StringVar(&nodeName, "node-name", "", "NodeName to use (default: the short hostname)")
	fs.BoolVar(&numaAsSocket, "numa-as-socket", false, "count NUMA nodes as sockets (for SlurmdParameters=numa_node_as_socket)")
	fs.BoolVar(&nodeNameLines, "node-name-lines", false, "start every gres.conf line with NodeName=<node> (a gres.conf shared by several nodes, or configless Slurm)")
	c.Register(fs)
	if done, code := cli.Parse(fs, &c, e.Args, stdout); done {
		return code
	}
	if fs.NArg() > 0 {
		return cli.Fail(stderr, prog, cli.ExitBadInput, fmt.Errorf("unexpected argument %q (see -h)", fs.Arg(0)))
	}
	if format != "gres" && format != "slurm" && format != "table" && format != "json" {
		return cli.Fail(stderr, prog, cli.ExitBadInput, fmt.Errorf("--format %q: want gres, slurm, table or json", format))
	}
	cfg, err := c.LoadConfig()
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitBadInput, err)
	}
	log, err := c.Logger(stderr, cfg)
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitBadInput, err)
	}
	var conf *slurm.GresConf
	if check != "" {
		data, err := os.ReadFile(check)
		if err != nil {
			return cli.Fail(stderr, prog, cli.ExitBadInput, err)
		}
		if conf, err = slurm.ParseGresConf(check, data); err != nil {
			return cli.Fail(stderr, prog, cli.ExitBadInput, err)
		}
	}
	backend, err := c.OpenGPU(cfg)
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitBadInput, err)
	}
	defer backend.Close()
	log.Debug("gpu backend", "name", backend.Name())
	node, err := topo.Discover(c.HostRoot(), backend, topo.Options{NICs: (format == "table" || format == "json") && check == ""})
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitBadInput, err)
	}
	opt := gresgen.OptionsFromConfig(cfg, numaAsSocket, nodeName)
	opt.NodeNameLines = nodeNameLines
	res, err := gresgen.Plan(node, opt)
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitBadInput, err)
	}
	if conf != nil {
		return report(stdout, check, gresgen.Check(node, res, conf, opt), c.JSON)
	}
	if format != "table" {
		for _, w := range res.Warnings {
			fmt.Fprintf(stderr, "%s: warning: %s\n", prog, w)
		}
	}
	if c.JSON {
		format = "json"
	}
	switch format {
	case "slurm":
		err = gresgen.WriteNodeLine(stdout, res)
	case "table":
		err = gresgen.WriteTable(stdout, node, res)
	case "json":
		err = gresgen.WriteJSON(stdout, node, res)
	default:
		err = gresgen.WriteGres(stdout, node, res, prog+" "+cli.Version)
	}
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitMismatch, err)
	}
	return cli.ExitOK
}

// report prints the differences --check found and picks the exit code.
func report(w io.Writer, file string, diffs []gresgen.Difference, asJSON bool) int {
	if asJSON {
		gresgen.WriteDifferencesJSON(w, file, diffs)
	} else if len(diffs) == 0 {
		fmt.Fprintf(w, "%s matches the hardware\n", file)
	} else {
		fmt.Fprintf(w, "%s differs from the hardware in %s:\n", file, plural.Count(len(diffs), "way", "ways"))
		for _, d := range diffs {
			fmt.Fprintf(w, "  %s\n", d)
		}
	}
	if len(diffs) > 0 {
		return cli.ExitMismatch
	}
	return cli.ExitOK
}
