package hookcmd

import (
	"io"

	"github.com/spf13/pflag"

	"gpuprep/lib/cli"
	"gpuprep/lib/fleet"
)

// newFlagSet registers the flags of gpuprep-<op> (op "prolog" or "epilog")
// on a new flag set bound to f: the common flags (cli.Common), the spool,
// the job's --job-* overrides of Slurm's environment, and --health (prolog)
// or --report, --since, --from and --top (epilog). Errors and usage go to stderr.
func newFlagSet(op string, f *flags, stderr io.Writer) *pflag.FlagSet {
	fs := cli.NewFlagSet("gpuprep-"+op, usage(op), stderr)
	f.common.Register(fs)
	fs.StringVar(&f.stateDir, "state-dir", "", "spool directory (default: the config's, /var/lib/gpuprep)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "print the plan and write nothing (no spool, lock, metrics, log file or syslog)")
	fs.BoolVar(&f.checkConfig, "check-config", false, "validate the configuration and check it against this node read-only as the prolog would (profiles against its GPUs, each GPU's MIG layout, required knobs, health checks); exit 0 (ok), 2 (invalid) or 1 (a prolog here would fail)")
	fs.StringVar(&f.jobID, "job-id", "", "job id (default SLURM_JOB_ID)")
	fs.StringVar(&f.jobUser, "job-user", "", "job user (default SLURM_JOB_USER)")
	fs.StringVar(&f.jobGPUs, "job-gpus", "", "job GPU indices, e.g. 0,1 (default SLURM_JOB_GPUS)")
	fs.StringVar(&f.constraints, "constraints", "", "job constraints (default SLURM_JOB_CONSTRAINTS)")
	fs.StringVar(&f.comment, "comment", "", "job comment (default SLURM_JOB_COMMENT)")
	if op == "prolog" {
		fs.BoolVar(&f.health, "health", false, "run the health checks read-only on every GPU, print a table (or --json), exit 0 (healthy) or 1 (a fatal check failed)")
	}
	if op == "epilog" {
		fs.BoolVar(&f.report, "report", false, "print the drift history and exit")
		fs.StringVar(&f.job, "job", "", "with --report: what job `ID`'s GPUs did on this node (its evidence), so far while it runs")
		fs.DurationVar(&f.since, "since", 0, "with --report: only records newer than this (e.g. 24h)")
		fs.StringArrayVar(&f.fleet.from, "from", nil, "with --report: a fleet summary of the drift files `PATH` names instead of this node's spool; repeatable; PATH is "+fleet.Layout)
		fs.IntVar(&f.fleet.top, "top", fleet.DefaultTop, "with --report --from: how many nodes TOP NODES lists (0: all)")
		f.fleet.fs = fs
		fs.BoolVar(&f.held, "held", false, "list the jobs whose settings this node holds, read only; exit 0 (none), 1 (some: removing gpuprep is refused) or 2")
		fs.BoolVar(&f.restoreAll, "restore-all", false, "put the node back at its baseline: release every job that is over (and, with --force, those that still look alive), as their epilogs would")
		fs.BoolVar(&f.force, "force", false, "with --restore-all: also release jobs that still look alive")
	}
	return fs
}

// FlagSet is the flag set gpuprep-<op> parses (op "prolog" or "epilog"),
// bound to values nothing reads: the man page generator (internal/mangen)
// lists its flags and its -h synopsis. It runs nothing.
func FlagSet(op string) *pflag.FlagSet { return newFlagSet(op, &flags{}, io.Discard) }
