package hook

import (
	"fmt"
	"slices"
	"time"

	"gpuprep/lib/evidence"
	"gpuprep/lib/gpu"
	"gpuprep/lib/knob"
)

// The job's evidence ([evidence], lib/evidence): the prolog reads the
// counters of the job's GPUs after applying (startEvidence) and keeps them
// in the job's record; the epilog reads them again before restoring
// (endEvidence) and, once the job is released, writes what the GPUs did
// to <state_dir>/jobs (evidencefile.go). Nothing is read for a job without
// GPUs.

// startEvidence is the prolog's snapshot of rec's GPUs and why each is
// not the job's alone; nil when [evidence] is off, the job has no GPUs or
// the backend reads no counters.
func startEvidence(o *run, s *spoolState, rec *JobRecord) {
	snap := snapshot(o, s.bootID, rec.GPUs)
	if snap == nil {
		return
	}
	rec.Evidence = snap
	rec.EvidenceShared = sharedWhy(o, s, rec)
}

// snapshot reads the counters of the GPUs uuids now (evidence.Take).
func snapshot(o *run, bootID string, uuids []string) *evidence.Snapshot {
	if !o.Config.Evidence.Enabled || len(uuids) == 0 || o.GPU == nil {
		return nil
	}
	r, ok := gpu.As[gpu.CountersReader](o.GPU)
	if !ok {
		o.Log.Debug("no job evidence: the GPU backend reads no counters", "backend", o.GPU.Name())
		return nil
	}
	snap := evidence.Take(r, gpusByUUID(o.devices(), uuids), o.now(), bootID, driverVersion(o))
	return &snap
}

// driverVersion is the NVIDIA driver's version, "" when the backend cannot
// tell: a changed version between the snapshots means a reloaded driver.
func driverVersion(o *run) string { return DriverVersion(o.GPU) }

// DriverVersion is b's NVIDIA driver version, "" when it cannot tell.
func DriverVersion(b gpu.Backend) string {
	d, ok := gpu.As[gpu.DriverReader](b)
	if !ok {
		return ""
	}
	v, err := d.DriverVersion()
	if err != nil {
		return ""
	}
	return v
}

// sharedWhy says, by GPU UUID, why a GPU of rec's job was not the job's
// alone: other jobs' records holding it, MIG mode (its other MIG devices
// count too), MPS (the job asked for a share, or holds an MPS daemon).
func sharedWhy(o *run, s *spoolState, rec *JobRecord) map[string][]string {
	out := map[string][]string{}
	add := func(uuid, why string) {
		if !slices.Contains(out[uuid], why) {
			out[uuid] = append(out[uuid], why)
		}
	}
	holders := holdersOf(s.jobs)
	for _, d := range gpusByUUID(o.devices(), rec.GPUs) {
		if d.MIG.Current {
			add(d.UUID, "MIG mode: the GPU's counters include its other MIG devices")
		}
		if o.Job.MPS || holdsMPS(rec, d.UUID) {
			add(d.UUID, "MPS: the GPU's processes may be other jobs' too")
		}
		for _, other := range holders[d.UUID] {
			if other != rec.Job {
				add(d.UUID, fmt.Sprintf("shared with job %s", other))
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// holdsMPS says whether rec holds the mps knob of GPU uuid.
func holdsMPS(rec *JobRecord, uuid string) bool {
	for _, h := range rec.Holds {
		if h.ID.Name == "mps" && h.ID.Scope == knob.GPUScope(uuid) {
			return true
		}
	}
	return false
}

// mergeShared adds b's reasons to a's.
func mergeShared(a, b map[string][]string) map[string][]string {
	if len(b) == 0 {
		return a
	}
	out := map[string][]string{}
	for u, why := range a {
		out[u] = slices.Clone(why)
	}
	for u, why := range b {
		for _, w := range why {
			if !slices.Contains(out[u], w) {
				out[u] = append(out[u], w)
			}
		}
	}
	return out
}

// jobProcesses are the job's processes on the GPUs whose accounting mode
// it holds on (the gpu_accounting knob), from NVML's accounting records:
// those alive between the prolog's snapshot and end (evidence.Processes).
// A GPU whose records cannot be read is a warning of the record.
func jobProcesses(o *run, rec *JobRecord, end time.Time) (procs []evidence.Process, warns []string) {
	r, ok := gpu.As[gpu.AccountingReader](o.GPU)
	if !ok || rec.Evidence == nil {
		return nil, nil
	}
	for _, d := range gpusByUUID(o.devices(), rec.GPUs) {
		if !holdsOn(rec, "gpu_accounting", d.UUID) {
			continue
		}
		stats, err := r.AccountingStats(d.Index)
		if err != nil {
			warns = append(warns, fmt.Sprintf("GPU %d: its processes' accounting cannot be read: %v", d.Index, err))
			continue
		}
		procs = append(procs, evidence.Processes(d.UUID, stats, rec.Evidence.Time, end)...)
	}
	return procs, warns
}

// holdsOn says whether rec holds knob name of GPU uuid at "on".
func holdsOn(rec *JobRecord, name, uuid string) bool {
	for _, h := range rec.Holds {
		if h.ID.Name == name && h.ID.Scope == knob.GPUScope(uuid) && h.Expected == "on" {
			return true
		}
	}
	return false
}
