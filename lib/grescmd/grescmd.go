// Package grescmd is the command line of gpuprep-gres: its flags, which
// output to print, and --check's report and exit code. Discovering the node
// is lib/topo's, planning and writing gres.conf lib/gresgen's, and parsing an
// existing one lib/slurm's.
package grescmd

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"gpuprep/lib/cli"
	"gpuprep/lib/cmdenv"
	"gpuprep/lib/config"
	"gpuprep/lib/gresgen"
	"gpuprep/lib/host"
	"gpuprep/lib/plural"
	"gpuprep/lib/slurm"
	"gpuprep/lib/topo"
)

const synopsis = `usage: gpuprep-gres [flags]

Prints gres.conf for this node (default), the slurm.conf node line
(--format slurm), a table of GPU, NUMA, cores, NICs and NVLinks
(--format table), or all of it as JSON. The node line counts sockets as
slurmd will, following SlurmdParameters in the node's slurm.conf.
--check FILE compares an existing gres.conf with the hardware, and the
node's NodeName= line in slurm.conf with what slurmd will register: exit 0
when they match, 1 on a mismatch, 2 when FILE cannot be read or parsed. Any output exits 1 when NVIDIA GPUs
are on the PCI bus but the GPU backend lists none (driver not loaded).`

// Main is gpuprep-gres: it prints the node's gres.conf (GPUs and MIG devices
// with Slurm core ids and NVLink counts), its slurm.conf node line, a table
// or JSON, from the detected topology, or checks an existing gres.conf
// against the hardware. It returns the exit code: 0 done (or --check
// matches), 1 a --check mismatch or a node problem (NVIDIA GPUs on the PCI
// bus that the GPU backend does not list), 2 bad input.
func Main(e cli.Env) int {
	const prog = "gpuprep-gres"
	stdout, stderr := e.Stdout, e.Stderr
	var f flags
	fs := f.flagSet(stderr)
	if done, code := cli.Parse(fs, &f.common, e.Args, stdout); done {
		return code
	}
	c, format, check, nodeName, slurmConf, numaAsSocket, nodeNameLines := f.common, f.format, f.check, f.nodeName, f.slurmConf, f.numaAsSocket, f.nodeNameLines
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
		data, err := readGresConf(check)
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
	if len(node.GPUs) == 0 {
		if err := gpusUnseen(c.HostRoot(), backend.Name()); err != nil {
			return cli.Fail(stderr, prog, cli.ExitMismatch, err)
		}
	}
	numaFlag := config.Tristate("") // not given: the config's, "auto" by default
	if fs.Changed("numa-as-socket") {
		numaFlag = config.False
		if numaAsSocket {
			numaFlag = config.True
		}
	}
	opt := gresgen.OptionsFromConfig(cfg, numaFlag, nodeName)
	opt.NodeNameLines = nodeNameLines
	// What slurmd will count as sockets: the default follows it, an
	// explicit choice is held against it.
	if opt.Slurmd, err = gresgen.ReadSlurmdView(c.HostRoot(), e.Getenv("SLURM_CONF"), slurmConf); err != nil {
		return cli.Fail(stderr, prog, cli.ExitBadInput, err)
	}
	log.Debug("slurmd sockets", "view", opt.Slurmd.Sockets, "conf", opt.Slurmd.Conf, "where", opt.Slurmd.Where)
	res, err := gresgen.Plan(node, opt)
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitBadInput, err)
	}
	if conf != nil {
		return report(stdout, check, gresgen.Check(node, res, conf, opt), c.JSON)
	}
	if res.LinksUnknown {
		spec, by := backendChoice(c.GPUBackend, cfg)
		if w, ok := linksWarning(spec, by, backend, c.HostRoot()); ok {
			res.Warnings = append(res.Warnings, w)
		}
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
		err = gresgen.WriteGres(stdout, node, res, prog+" "+cmdenv.Version)
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

// maxGresConf bounds what --check reads: a gres.conf of thousands of nodes is
// a few hundred kilobytes.
const maxGresConf = 16 << 20

// readGresConf reads --check's file: a regular file of at most maxGresConf
// bytes (a FIFO would hang the command, /dev/zero fill its memory).
func readGresConf(path string) ([]byte, error) {
	data, _, err := host.ReadRegular(path, maxGresConf)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path goes first, once
		}
		return nil, fmt.Errorf("%s: cannot read: %w", path, err)
	}
	return data, nil
}

// gpusUnseen is the error for a node whose GPU backend lists no GPU while
// NVIDIA GPUs sit on its PCI bus (driver not loaded, NVML missing): a
// gres.conf without them would make slurmd drop every GPU. nil when the bus
// has none either.
func gpusUnseen(root host.Root, backend string) error {
	bus, err := topo.NVIDIAGPUsOnBus(root)
	if err != nil || len(bus) == 0 {
		return nil
	}
	what := "NVIDIA GPUs"
	if len(bus) == 1 {
		what = "NVIDIA GPU"
	}
	if backend == "none" { // what --gpu-backend auto falls back to without NVML and driver
		return fmt.Errorf("%d %s on the PCI bus but the none backend lists none: neither NVML nor /proc/driver/nvidia answers (is the driver loaded?)", len(bus), what)
	}
	return fmt.Errorf("%d %s on the PCI bus but the %s backend lists none (is the driver loaded?)", len(bus), what, backend)
}
