package hook

import (
	"maps"
	"slices"
	"strconv"

	"gpuprep/lib/nodedesc"
	"gpuprep/lib/plan"
	"gpuprep/lib/rundir"
	"gpuprep/lib/state"
)

// gpuprep's run directory, /run/gpuprep (lib/rundir), is opened once per
// run, by prepare, before anything in it is read or changed (an
// interrupted run's recovery included), and closed when the run ends
// (publish, forgetNotices). Every knob gets it (knob.Env.RunDir), and the
// node description and notices are written through it.

// runDirState is the run directory of one run (Options.rd).
type runDirState struct {
	dir    *rundir.Dir
	err    error
	opened bool
}

// openRunDir opens the run directory for this run, once: read only in a
// dry run. One another user owns or others can write is moved aside and
// made afresh only while nothing holds settings whose state may be in it
// (heldSettings); else it is a node error that says why, so the prolog
// fails rather than orphan those jobs' state. What was moved aside goes
// into out's warnings.
func openRunDir(o *run, out *Outcome) error {
	if !o.rd.opened {
		o.rd.opened = true
		opt := rundir.Options{Held: func() ([]string, error) { return heldSettings(o) }}
		open := rundir.Open
		if o.DryRun {
			open = rundir.OpenReadOnly
		}
		if o.rd.dir, o.rd.err = open(o.Root, opt); o.rd.err != nil {
			o.rd.err = nodeErrorf("run directory: %v", o.rd.err)
		}
		noteFormats(o)
	}
	noteMoved(o, out)
	return o.rd.err
}

// noteFormats says, once per run, that the spool or the run directory was
// written by an older gpuprep (a package upgraded while jobs ran: their
// settings are restored from it as they were recorded).
func noteFormats(o *run) {
	if o.Spool != nil && o.Spool.Format() < state.Format {
		o.Log.Info("state dir of an older gpuprep, read in its format", "dir", o.Spool.Dir(), "format", o.Spool.Format(), "current", state.Format)
	}
	if o.rd.dir != nil && o.rd.dir.Format() < rundir.Format {
		o.Log.Info("run directory of an older gpuprep, read in its format", "format", o.rd.dir.Format(), "current", rundir.Format)
	}
}

// noteMoved logs what the run directory moved aside, and adds it to out's
// warnings.
func noteMoved(o *run, out *Outcome) {
	if o.rd.dir == nil {
		return
	}
	for _, m := range o.rd.dir.Moved() {
		o.Log.Warn("untrusted run directory moved aside", "what", m)
		out.warn(plan.KindNode, "%s", m)
	}
}

// closeRunDir closes the run's run directory; a later run with the same
// Options opens it again.
func closeRunDir(o *run) {
	o.rd.dir.Close()
	o.rd = runDirState{}
}

// heldSettings lists what holds settings whose state may be in the run
// directory (the IRQs' list, the MPS daemons' directories, the units'
// marks): an interrupted run (the spool's journal, read or not) and the
// jobs with a record of this boot (the run directory is a tmpfs: an
// earlier boot's jobs left nothing in it).
func heldSettings(o *run) ([]string, error) {
	var held []string
	var j Journal
	if found, err := o.Spool.ReadJSON(journalFile, &j); found || err != nil {
		held = append(held, "an interrupted run (its journal)")
	}
	recs, err := readJobRecords(o.Spool)
	if err != nil {
		return nil, err
	}
	boot := readBootID(o)
	for _, job := range slices.Sorted(maps.Keys(recs)) {
		if r := recs[job]; boot == "" || r.BootID == "" || r.BootID == boot {
			held = append(held, "job "+job)
		}
	}
	return held, nil
}

// tidyRunDir removes what jobs that are gone left in the run directory:
// the notices of every job but own (the run's own job) that has no record
// and that Slurm's cgroups and processes do not show alive (the prolog
// commits a job's record before it writes its notices, so such notices
// are those of a job whose epilog was killed after it let go of the job);
// and the temporary files of killed writes. Slurm's jobs are looked for
// only when such notices are found. A failure is a warning: nothing of
// the node's settings is in them.
func tidyRunDir(o *run, s *spoolState, own string) {
	if o.DryRun || o.rd.dir == nil {
		return
	}
	if removed, err := o.rd.dir.Sweep(); err != nil {
		o.Log.Warn("sweeping the run directory", "err", err)
	} else if len(removed) > 0 {
		o.Log.Info("removed temporary files of killed runs", "dir", o.rd.dir.Path(), "files", removed)
	}
	keep := func(job uint64) bool {
		id := strconv.FormatUint(job, 10)
		return id == own || s.jobs[id] != nil || o.jobEvidence().alive(id)
	}
	gone, err := nodedesc.ForgetNotices(o.rd.dir, keep)
	if err != nil {
		o.Log.Warn("the notices of jobs that are gone not removed", "err", err)
	}
	if len(gone) > 0 {
		o.Log.Info("removed the notices of jobs that are gone", "jobs", gone)
	}
}
