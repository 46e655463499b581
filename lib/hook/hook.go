// Package hook runs gpuprep's Slurm prolog and epilog: recover an interrupted
// run, plan, journal, apply, record. Everything a run does to the node goes
// through a write-ahead journal in the spool, so a prolog or epilog killed at
// any point leaves enough to put the node back, and the next run does so
// before anything else.
package hook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
	"gpuprep/lib/knob"
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
}

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

// jobGPUs maps SLURM_JOB_GPUS (gres indices, PCI bus order) to the backend's
// devices, which are sorted by bus id too.
func jobGPUs(all []gpu.Device, idx []int) ([]gpu.Device, error) {
	var out []gpu.Device
	for _, i := range idx {
		found := false
		for _, d := range all {
			if d.Index == i {
				out = append(out, d)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("SLURM_JOB_GPUS names GPU %d, but the node has %d GPUs", i, len(all))
		}
	}
	return out, nil
}

// catalog returns every knob for the node and the given GPUs, indexed by ID.
func catalog(o *Options, gpus []gpu.Device) map[string]knob.Knob {
	ks := knob.Catalog(knob.Env{Root: o.Root, GPU: o.GPU, GPUs: gpus})
	m := make(map[string]knob.Knob, len(ks))
	for _, k := range ks {
		m[k.ID().String()] = k
	}
	return m
}

// allGPUs lists the node's GPUs; a backend that cannot list them gives none
// (node knobs still work).
func allGPUs(o *Options) []gpu.Device {
	if o.GPU == nil {
		return nil
	}
	devs, err := o.GPU.Devices()
	if err != nil {
		o.Log.Warn("cannot list GPUs; GPU knobs skipped", "err", err)
		return nil
	}
	return devs
}

// crashPoint lets the crash-safety tests kill the run at its n-th step:
// GPUPREP_TEST_CRASH_AT=n. Steps are the writes a run makes.
var crashStep int

func crashPoint() {
	crashStep++
	if v := os.Getenv("GPUPREP_TEST_CRASH_AT"); v != "" && v == fmt.Sprint(crashStep) {
		p, _ := os.FindProcess(os.Getpid())
		p.Kill()
		select {} // wait for SIGKILL
	}
}

func checkDeadline(ctx context.Context, what string) error {
	if err := ctx.Err(); err != nil {
		return nodeErrorf("deadline passed before %s: %v", what, err)
	}
	return nil
}

// about says what went wrong with a knob without naming it twice: knob
// errors start with the knob's ID already.
func about(id fmt.Stringer, err error) string {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, id.String()+": "); ok {
		msg = rest
	}
	return id.String() + ": " + msg
}
