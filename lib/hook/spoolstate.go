package hook

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	"gpuprep/lib/host"
	"gpuprep/lib/knob"
	"gpuprep/lib/plan"
	"gpuprep/lib/plural"
)

// spoolState is the spool as one run sees it under the node lock: node.json
// and every job record, checked against each other and the boot.
type spoolState struct {
	node   NodeFile
	jobs   map[string]*JobRecord
	bootID string // now; "" when the kernel file is unreadable (fixture roots)
	// bootStale are jobs whose prolog ran in an earlier boot.
	bootStale []string
	// rebooted: node.json's baseline is from an earlier boot.
	rebooted bool
	// lost says why node.json held no state ("" when it was fine).
	lost string
	// dirty: node must be written even if the run changes no knob.
	dirty bool
}

// nodeState is the planner's view: the baseline, and who holds which knob,
// derived from the job records (oldest job first; all holders of a knob
// hold the value the first one set).
func (s *spoolState) nodeState() plan.NodeState {
	st := plan.NodeState{Baseline: s.node.clone().Baseline, Holders: map[string]plan.Holding{}}
	for _, job := range s.jobOrder() {
		for _, h := range s.jobs[job].Holds {
			key := h.ID.String()
			hd := st.Holders[key]
			if len(hd.Jobs) == 0 {
				hd.Value = h.Expected
			}
			hd.Jobs = append(hd.Jobs, job)
			st.Holders[key] = hd
		}
	}
	return st
}

// jobOrder lists the job records by prolog time, then job id.
func (s *spoolState) jobOrder() []string {
	jobs := make([]string, 0, len(s.jobs))
	for j := range s.jobs {
		jobs = append(jobs, j)
	}
	sort.Slice(jobs, func(a, b int) bool {
		ra, rb := s.jobs[jobs[a]], s.jobs[jobs[b]]
		if !ra.Started.Equal(rb.Started) {
			return ra.Started.Before(rb.Started)
		}
		return jobs[a] < jobs[b]
	})
	return jobs
}

// loadSpool reads node.json and the job records. A node.json that is
// missing, empty, "{}", "null" or garbage while jobs hold knobs is rebuilt
// from the baseline copies in their records; a garbage one is kept aside as
// node.json.bad (not in a dry run). The tuned values on the node are never
// taken for the baseline: a held knob whose baseline cannot be rebuilt is a
// node error, unless [defaults] gives its value.
func loadSpool(o *run, bootID string) (*spoolState, error) {
	s := &spoolState{bootID: bootID}
	found, err := o.Spool.ReadJSON(nodeFile, &s.node)
	switch {
	case err != nil:
		s.lost = fmt.Sprintf("unreadable: %v", err)
		s.node = NodeFile{}
		if !o.DryRun {
			if rerr := o.Spool.Rename(nodeFile, nodeFile+".bad"); rerr != nil {
				return nil, nodeErrorf("spool: %v; keeping it aside failed: %v", err, rerr)
			}
			o.Log.Warn("node.json unreadable; kept as node.json.bad, rebuilding it", "err", err)
		}
	case !found:
		s.lost = "missing"
	case s.node.Baseline == nil:
		s.lost = "empty"
	}
	if s.node.Baseline == nil {
		s.node.Baseline = map[string]knob.Value{}
	}
	if s.jobs, err = readJobRecords(o.Spool); err != nil {
		return nil, nodeErrorf("spool: %v", err)
	}
	if bootID != "" {
		switch s.node.BootID {
		case bootID:
		case "":
			s.node.BootID, s.dirty = bootID, true
		default:
			s.rebooted = true
		}
		for _, j := range s.jobOrder() {
			if b := s.jobs[j].BootID; s.rebooted || (b != "" && b != bootID) {
				s.bootStale = append(s.bootStale, j)
			}
		}
	}
	return s, nil
}

// rebuildBaseline gives every knob a live job holds a baseline: node.json's,
// else the copy in a job record, else [defaults] (used at release). A held
// knob with none of them is a node error: the node would stay tuned.
// A part-wise knob's baseline, which later prologs add parts to
// (knob.Def.PartWise: housekeeping_cpus, one cpuset per cgroup), joins the
// copies of every record, the oldest's parts first: each record holds the
// baseline as its own prolog left it.
func (s *spoolState) rebuildBaseline(o *run) error {
	rebuilt := map[string]bool{}
	for _, job := range s.jobOrder() {
		if slices.Contains(s.bootStale, job) {
			continue
		}
		rec := s.jobs[job]
		for _, h := range rec.Holds {
			key := h.ID.String()
			if _, ok := s.node.Baseline[key]; ok {
				if v, ok := rec.Baseline[key]; ok && rebuilt[key] {
					if err := s.mergeBaseline(key, h.ID.Name, v); err != nil {
						return nodeErrorf("spool: job %s's baseline of %s: %v", job, key, err)
					}
				}
				continue
			}
			if v, ok := rec.Baseline[key]; ok {
				s.node.Baseline[key], s.dirty = v, true
				rebuilt[key] = true
				o.Log.Warn("baseline rebuilt from a job record", "knob", key, "job", job, "node_json", s.lost)
				continue
			}
			if _, ok := fallbackValue(o, h.ID.Name); ok {
				o.Log.Warn("baseline lost; [defaults] will be restored", "knob", key, "job", job)
				continue
			}
			why := "has no entry for it"
			if s.lost != "" {
				why = s.lost
			}
			return nodeErrorf("spool %s: the baseline of %s is lost (node.json %s) while job %s holds it; not taking the tuned value for the baseline: set %s in [defaults] of the config, or restore it by hand and remove %s",
				o.Spool.Dir(), key, why, job, h.ID.Name, jobFile(job))
		}
	}
	return nil
}

// mergeBaseline joins a job record's copy v of a part-wise knob's baseline
// (name; key its ID) into node.json's (knobval.Form.Merge).
func (s *spoolState) mergeBaseline(key, name string, v knob.Value) error {
	d, _ := knob.Lookup(name)
	if d.PartWise == nil {
		return nil
	}
	merged, err := d.PartWise.Merge(s.node.Baseline[key], v)
	if err != nil {
		return err
	}
	s.node.Baseline[key] = merged
	return nil
}

// dropBootStale forgets the jobs of an earlier boot: the reboot ended them
// and reset what they had tuned. When node.json's baseline is from an earlier
// boot, it goes to History, with how the freshly booted node differs from
// it, and the baseline is recorded anew from what this boot shows.
func (s *spoolState) dropBootStale(o *run, out *Outcome) error {
	if s.rebooted {
		diffs := o.bootDifferences(s.node.Baseline)
		for _, d := range diffs {
			o.Log.Warn("after the reboot a knob differs from the old baseline", "difference", d)
		}
		hist := append(s.node.History, BootBaseline{BootID: s.node.BootID, Until: o.now().UTC(), Baseline: s.node.Baseline, Differences: diffs})
		if len(hist) > maxHistory {
			hist = hist[len(hist)-maxHistory:]
		}
		s.node = NodeFile{BootID: s.bootID, Baseline: map[string]knob.Value{}, History: hist}
		s.rebooted, s.dirty = false, true
		out.warn(plan.KindNode, "node rebooted: baseline of boot %s moved to history (%s); recording it anew", hist[len(hist)-1].BootID, plural.Count(len(diffs), "difference", "differences"))
	}
	if len(s.bootStale) == 0 && !s.dirty {
		return nil
	}
	for _, job := range s.bootStale {
		out.Released = append(out.Released, Released{Job: job, Kind: "reboot", Reason: "node rebooted since its prolog"})
		o.Log.Warn("dropping a job of an earlier boot", "stale_job", job)
	}
	if o.DryRun {
		return nil
	}
	if err := o.Spool.WriteJSON(nodeFile, s.node); err != nil {
		return nodeErrorf("spool: %v", err)
	}
	s.dirty = false
	for _, job := range s.bootStale {
		if rec := s.jobs[job]; rec != nil && rec.Evidence != nil {
			writeEvidence(o, abandonedEvidence(o, rec, "the node rebooted while the job ran"), out)
		}
		if err := o.Spool.Remove(jobFile(job)); err != nil {
			return nodeErrorf("spool: %v", err)
		}
		delete(s.jobs, job)
	}
	s.bootStale = nil
	return nil
}

// bootDifferences reads each knob of an old baseline now and says which
// differ ("vm_swappiness@node: 60 -> 10").
func (o *run) bootDifferences(old map[string]knob.Value) []string {
	knobs := catalog(o, o.devices())
	var out []string
	for _, key := range slices.Sorted(maps.Keys(old)) {
		k, ok := knobs[key]
		if !ok {
			out = append(out, key+": gone")
			continue
		}
		v, err := k.Read()
		read := observed(k.ID())
		read.Current = v
		if err == nil {
			// A part-wise baseline names its parts: compare by part.
			if same, herr := read.Holds(old[key]); herr == nil && same {
				continue
			}
			v = read.Value()
		}
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("%s: unreadable (%v)", key, err))
		case v != old[key]:
			out = append(out, fmt.Sprintf("%s: %s -> %s", key, old[key], v))
		}
	}
	return out
}

// readBootID is /proc/sys/kernel/random/boot_id, or "" when it cannot be
// read (then reboots are not detected).
func readBootID(o *run) string {
	id, err := host.ReadBootID(o.Root)
	if err != nil {
		o.Log.Debug("no boot id: reboots not detected", "err", err)
		return ""
	}
	return id
}
