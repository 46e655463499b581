package grescmd

import (
	"io"

	"github.com/spf13/pflag"

	"gpuprep/lib/cli"
)

// flags are gpuprep-gres's flags: its own, then cli.Common.
type flags struct {
	common                      cli.Common
	format, check, nodeName     string
	slurmConf                   string
	numaAsSocket, nodeNameLines bool
}

// flagSet registers gpuprep-gres's flags on a new flag set bound to f;
// errors and usage go to stderr.
func (f *flags) flagSet(stderr io.Writer) *pflag.FlagSet {
	fs := cli.NewFlagSet("gpuprep-gres", synopsis, stderr)
	fs.StringVar(&f.format, "format", "gres", "gres|slurm|table|json")
	fs.StringVar(&f.check, "check", "", "compare this gres.conf with the hardware (exit 1 on mismatch)")
	fs.StringVar(&f.nodeName, "node-name", "", "NodeName to use (default: the short hostname)")
	fs.BoolVar(&f.numaAsSocket, "numa-as-socket", false, "count NUMA nodes as sockets (for SlurmdParameters=numa_node_as_socket), or =false real sockets; default: [gres] numa_as_socket, \"auto\": what slurmd will count, per SlurmdParameters in the node's slurm.conf")
	fs.StringVar(&f.slurmConf, "slurm-conf", "", "read SlurmdParameters (and, for --check, this node's NodeName= line) from this slurm.conf, a file on this machine, instead of the node's (SLURM_CONF, /etc/slurm/slurm.conf, the configless copy)")
	fs.BoolVar(&f.nodeNameLines, "node-name-lines", false, "start every gres.conf line with NodeName=<node> (a gres.conf shared by several nodes, or configless Slurm)")
	f.common.Register(fs)
	return fs
}

// FlagSet is the flag set gpuprep-gres parses, bound to values nothing
// reads: the man page generator (internal/mangen) lists its flags and its
// -h synopsis. It runs nothing.
func FlagSet() *pflag.FlagSet { return new(flags).flagSet(io.Discard) }
