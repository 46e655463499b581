// Package hook is the engine of gpuprep's Slurm prolog and epilog: recover an
// interrupted run, plan, journal, apply, record (Prolog and Epilog, given
// Options, return an Outcome). Everything a run does to the node goes
// through a write-ahead journal in the spool, so a prolog or epilog killed at
// any point leaves enough to put the node back, and the next run does so
// before anything else. It owns the spool's job records and node state
// (records.go, spoolstate.go), telling dead jobs (liveness.go), releasing a
// job's knobs (release.go) and finishing interrupted runs (recover.go).
//
// The command line around it (flags, the job from the environment, the
// deadline, the node lock, output, metrics, the drain reason, exit codes)
// is lib/hookcmd; this package knows nothing of it.
package hook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
	"gpuprep/lib/isolate"
	"gpuprep/lib/isolate/cgwriter"
	"gpuprep/lib/knob"
	"gpuprep/lib/plan"
	"gpuprep/lib/slurm"
	"gpuprep/lib/state"
)

// Options are what a prolog or epilog run needs.
type Options struct {
	Root    host.Root
	Config  *config.Config
	GPU     gpu.Backend
	Spool   *state.Spool
	Job     slurm.Job
	Node    string // node name for records (SLURMD_NODENAME, else hostname)
	DryRun  bool
	Log     *slog.Logger
	Now     func() time.Time
	Started time.Time
	// Version is the running gpuprep's version (cmdenv.Version), recorded in
	// the node description.
	Version string
	// Units is systemd where PID 1 is systemd (lib/isolate/sdunits):
	// isolation confines its units through it. nil: cgroups are written
	// directly.
	Units isolate.Units
	// MPS is how the mps knob runs its daemons (knob.MPSEnv); its zero
	// value runs them on the node: a systemd unit each where Units is
	// set, a cgroup of gpuprep's elsewhere.
	MPS knob.MPSEnv
}

// run is one prolog's or epilog's state beside the caller's Options: what
// it reads once and shares between its phases.
type run struct {
	*Options
	gpus       []gpu.Device // the node's GPUs, listed once (devices)
	gpusListed bool
	migFilled  bool // withMIGUUIDs read the MIG devices' UUIDs
	// jobs is what the run found of Slurm's jobs (jobEvidence), looked
	// for once, when first needed.
	jobs *jobEvidence
	// gres is gres.conf's GPU devices in Slurm's order, read once per
	// run (gresDevices): jobGPUs and the node description both use it.
	gres     []gresDevice
	gresErr  error
	gresPath string
	gresRead bool
	// settings are the job's profile's settings once it is resolved (a
	// prolog); knobs that depend on another setting read them.
	settings func(name string) (string, bool)
	// rd is the run directory of this run (rundir.go).
	rd runDirState
	// asked is the profile selection the job asked for (a prolog), before
	// any fallback: its warnings are the job's notices too.
	asked config.Selection
	// evidence is what the last release's evidence record came to
	// (finishRelease): the file written ("" none) and the warnings.
	evidence struct {
		name  string
		warns []string
	}
}

func newRun(o *Options) *run { return &run{Options: o} }

func (o *Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// NodeError is a real node problem: the hook exits non-zero and Slurm drains
// the node with Reason as the first line of stderr.
type NodeError struct{ Reason string }

func (e *NodeError) Error() string { return e.Reason }

func nodeErrorf(format string, a ...any) error { return &NodeError{Reason: fmt.Sprintf(format, a...)} }

// IsNodeError says whether err is a node problem (drain) rather than bad
// input (exit 2).
func IsNodeError(err error) bool {
	var ne *NodeError
	return errors.As(err, &ne)
}

// jobKey is the job's id as the spool and holders name it.
func jobKey(j slurm.Job) string { return fmt.Sprint(j.ID) }

// catalog returns every knob for the node and the given GPUs, indexed by ID.
func catalog(o *run, gpus []gpu.Device) map[string]knob.Knob {
	gpus = o.withMIGUUIDs(gpus)
	iso := isolate.Options{Exclude: o.Config.Isolation.Exclude, Writer: cgwriter.Writer{},
		SlurmConf: o.Job.Conf, Node: o.Job.NodeName, Units: o.Units, Log: o.Log}
	ks := knob.Catalog(knob.Env{Root: o.Root, GPU: o.GPU, GPUs: gpus, Isolation: iso,
		User: o.Job.User, UID: o.Job.UID, GID: o.Job.GID, MPS: o.MPS, Settings: o.settings, RunDir: o.rd.dir})
	m := make(map[string]knob.Knob, len(ks))
	for _, k := range ks {
		m[k.ID().String()] = k
	}
	return m
}

// devices lists the node's GPUs, once per run (a light listing: MIG
// devices may lack their UUIDs, withMIGUUIDs); a backend that cannot list
// them gives none (node knobs still work).
func (o *run) devices() []gpu.Device {
	if o.gpusListed || o.GPU == nil {
		return o.gpus
	}
	o.gpusListed = true
	devs, err := o.GPU.Devices()
	if err != nil {
		o.Log.Warn("cannot list GPUs; GPU knobs skipped", "err", err)
		return nil
	}
	o.gpus = devs
	return devs
}

// withMIGUUIDs is gpus (some of devices()) with their MIG devices' UUIDs,
// which name the scopes of the MIG devices' knobs (mps): a light listing
// lacks them, so the run's GPUs in MIG mode are read again
// (gpu.FillMIGUUIDs), once per run and only when gpus holds such a GPU:
// a job on whole GPUs pays nothing for it.
func (o *run) withMIGUUIDs(gpus []gpu.Device) []gpu.Device {
	if !gpu.LacksMIGUUIDs(gpus) {
		return gpus
	}
	if !o.migFilled {
		o.migFilled = true
		if err := gpu.FillMIGUUIDs(o.GPU, o.devices()); err != nil {
			o.Log.Warn("cannot read the MIG devices' UUIDs; their MPS daemons are not managed", "err", err)
		}
	}
	uuids := make([]string, len(gpus))
	for i, d := range gpus {
		uuids[i] = d.UUID
	}
	return gpusByUUID(o.devices(), uuids)
}

// prepare brings the spool to a state a run can plan over, under the node
// lock: it opens the run directory (openRunDir), sweeps the temporary files of killed runs, finishes an
// interrupted run (its journal), reads node.json and the job records,
// forgets the jobs of an earlier boot, rebuilds a lost baseline, and
// releases the jobs that are over but never ran their epilog (except, this
// run's job, is never one). In a dry run it only reads, and reports what it
// would do.
func prepare(ctx context.Context, o *run, out *Outcome, except string) (*spoolState, error) {
	if err := openRunDir(o, out); err != nil { // rundir.go
		return nil, err
	}
	bootID := readBootID(o)
	if !o.DryRun {
		if removed, err := o.Spool.Sweep(); err != nil {
			o.Log.Warn("sweeping temporary files", "err", err)
		} else if len(removed) > 0 {
			o.Log.Info("removed temporary files of killed runs", "files", removed)
		}
		if err := recoverInterrupted(ctx, o, bootID); err != nil {
			return nil, err
		}
	}
	s, err := loadSpool(o, bootID)
	if err != nil {
		return nil, err
	}
	if err := s.dropBootStale(o, out); err != nil {
		return nil, err
	}
	if err := s.rebuildBaseline(o); err != nil {
		return nil, err
	}
	for _, d := range deadJobs(o, s, except) {
		out.Released = append(out.Released, d)
		o.Log.Warn("releasing a dead job", "dead_job", d.Job, "reason", d.Reason)
		if o.DryRun {
			continue
		}
		if err := releaseJob(ctx, o, s, s.jobs[d.Job], out, true, abandoned(o, s.jobs[d.Job], "the job's epilog never ran")); err != nil {
			return nil, err
		}
	}
	tidyRunDir(o, s, except)
	return s, nil
}

func checkDeadline(ctx context.Context, what string) error {
	if err := ctx.Err(); err != nil {
		return nodeErrorf("deadline passed before %s: %v", what, err)
	}
	return nil
}

// about says what went wrong with a knob without naming it twice
// (plan.About).
func about(id knob.ID, err error) string { return plan.About(id, err) }
