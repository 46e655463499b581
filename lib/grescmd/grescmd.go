// Package grescmd is the command line of gpuprep-gres: its flags, which
// output to print, and --check's report and exit code. Discovering the node
// is lib/topo's, planning and writing gres.conf lib/gresgen's, and parsing an
// existing one lib/gresconf's.
package grescmd

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"

	"github.com/spf13/pflag"

	"gpuprep/lib/cli"
	"gpuprep/lib/cmdenv"
	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
	"gpuprep/lib/gresconf"
	"gpuprep/lib/gresgen"
	"gpuprep/lib/host"
	"gpuprep/lib/plural"
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

// prog is the command's name in its messages.
const prog = "gpuprep-gres"

// Main is gpuprep-gres: it prints the node's gres.conf (GPUs and MIG devices
// with Slurm core ids and NVLink counts), its slurm.conf node line, a table
// or JSON, from the detected topology, or checks an existing gres.conf
// against the hardware. It returns the exit code: 0 done (or --check
// matches), 1 a --check mismatch or a node problem (NVIDIA GPUs on the PCI
// bus that the GPU backend does not list), 2 bad input.
func Main(e cli.Env) int {
	stdout, stderr := e.Stdout, e.Stderr
	var f flags
	set := f.flagSet(stderr)
	if done, code := cli.Parse(set, &f.common, e.Args, stdout); done {
		return code
	}
	c := f.common
	if err := checkUsage(set, f.format); err != nil {
		return cli.Fail(stderr, prog, cli.ExitBadInput, err)
	}
	cfg, log, err := loadConfig(&c, stderr)
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitBadInput, err)
	}
	conf, err := loadCheckFile(f.check)
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitBadInput, err)
	}
	backend, err := c.OpenGPU(cfg)
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitBadInput, err)
	}
	defer backend.Close()
	log.Debug("gpu backend", "name", backend.Name())
	node, code, err := discoverNode(&c, backend, f.format, f.check)
	if err != nil {
		return cli.Fail(stderr, prog, code, err)
	}
	opt, err := planOptions(e, &f, set, cfg)
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitBadInput, err)
	}
	log.Debug("slurmd sockets", "view", opt.Slurmd.Sockets, "conf", opt.Slurmd.Conf, "where", opt.Slurmd.Where)
	res, err := gresgen.Plan(node, opt)
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitBadInput, err)
	}
	if conf != nil {
		return report(stdout, f.check, gresgen.Check(node, res, conf, opt), c.JSON)
	}
	if res.LinksUnknown {
		addLinksWarning(res, &c, cfg, backend)
	}
	if err := output(stdout, stderr, f.format, c.JSON, node, res); err != nil {
		return cli.Fail(stderr, prog, cli.ExitMismatch, err)
	}
	return cli.ExitOK
}

// checkUsage rejects positional arguments and an unknown --format.
func checkUsage(set *pflag.FlagSet, format string) error {
	if set.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (see -h)", set.Arg(0))
	}
	if format != "gres" && format != "slurm" && format != "table" && format != "json" {
		return fmt.Errorf("--format %q: want gres, slurm, table or json", format)
	}
	return nil
}

// loadConfig loads the config and makes the logger (to stderr) it asks for.
func loadConfig(c *cli.Common, stderr io.Writer) (*config.Config, *slog.Logger, error) {
	cfg, err := c.LoadConfig()
	if err != nil {
		return nil, nil, err
	}
	log, err := c.Logger(stderr, cfg)
	if err != nil {
		return nil, nil, err
	}
	return cfg, log, nil
}

// loadCheckFile reads and parses --check's gres.conf; nil without --check.
func loadCheckFile(check string) (*gresconf.Conf, error) {
	if check == "" {
		return nil, nil
	}
	data, err := readGresConf(check)
	if err != nil {
		return nil, err
	}
	return gresconf.Parse(check, data)
}

// discoverNode detects the node's topology (NICs only for a table or JSON
// without --check). On error it also returns the exit code: bad input, or a
// mismatch when NVIDIA GPUs are on the bus but the backend lists none.
func discoverNode(c *cli.Common, backend gpu.Backend, format, check string) (*topo.Node, int, error) {
	node, err := topo.Discover(c.HostRoot(), backend, topo.Options{NICs: (format == "table" || format == "json") && check == ""})
	if err != nil {
		return nil, cli.ExitBadInput, err
	}
	if len(node.GPUs) == 0 {
		if err := gpusUnseen(c.HostRoot(), backend.Name()); err != nil {
			return nil, cli.ExitMismatch, err
		}
	}
	return node, cli.ExitOK, nil
}

// planOptions builds gresgen's options from the config and flags, with what
// slurmd will count as sockets: the default follows it, an explicit choice
// is held against it.
func planOptions(e cli.Env, f *flags, set *pflag.FlagSet, cfg *config.Config) (gresgen.Options, error) {
	numaFlag := config.Tristate("") // not given: the config's, "auto" by default
	if set.Changed("numa-as-socket") {
		numaFlag = config.False
		if f.numaAsSocket {
			numaFlag = config.True
		}
	}
	opt := gresgen.OptionsFromConfig(cfg, numaFlag, f.nodeName)
	opt.NodeNameLines = f.nodeNameLines
	var err error
	opt.Slurmd, err = gresgen.ReadSlurmdView(f.common.HostRoot(), e.Getenv("SLURM_CONF"), f.slurmConf)
	return opt, err
}

// addLinksWarning adds to res the warning for NVLink counts the GPU backend
// could not give, where the backend choice explains it.
func addLinksWarning(res *gresgen.Result, c *cli.Common, cfg *config.Config, backend gpu.Backend) {
	spec, by := backendChoice(c.GPUBackend, cfg)
	if w, ok := linksWarning(spec, by, backend, c.HostRoot()); ok {
		res.Warnings = append(res.Warnings, w)
	}
}

// output prints res's warnings to stderr (not for a table, which shows
// them) and res in format (JSON with --json) to stdout.
func output(stdout, stderr io.Writer, format string, asJSON bool, node *topo.Node, res *gresgen.Result) error {
	if format != "table" {
		for _, w := range res.Warnings {
			fmt.Fprintf(stderr, "%s: warning: %s\n", prog, w)
		}
	}
	if asJSON {
		format = "json"
	}
	switch format {
	case "slurm":
		return gresgen.WriteNodeLine(stdout, res)
	case "table":
		return gresgen.WriteTable(stdout, node, res)
	case "json":
		return gresgen.WriteJSON(stdout, node, res)
	default:
		return gresgen.WriteGres(stdout, node, res, prog+" "+cmdenv.Version)
	}
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
