package health

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
)

// Application Xids. A faulting CUDA program (a bad pointer, an illegal
// instruction, a kernel that overruns) makes the driver log an Xid such
// as 13, 31 or 69 against the GPU it ran on. The pid in the line is not
// the job's (it is whichever process owned the channel or was in the
// driver; under MPS the server), so gpuprep attributes an Xid to the jobs
// that held the GPU when a run read it: the epilog's job for the Xids the
// job's end reads, the running jobs for a prolog's or gpuprep-health's
// read. One job's faults are that job's; the same GPU faulting for many
// jobs is the GPU's, and the xid check says so once app_xid_jobs distinct
// jobs had one on it this boot.

// maxAppJobs bounds the jobs State keeps per GPU: the threshold is at
// most this many.
const maxAppJobs = 32

// IsAppFault says whether Xid n is an application fault: NVIDIA's catalog
// has the application restart it (immediate action RESTART_APP). The
// Xids that follow another fault (43, a channel reset after it; 45, a
// channel torn down, which a cancelled job also makes) are attributed to
// jobs too, but never count a job against the GPU.
func IsAppFault(n int) bool {
	e, found := catalogEntry(n)
	return found && e.Immediate == "RESTART_APP"
}

// AppXIDJob is one job that had application faults on a GPU: its Slurm
// job id, the codes, how many, and the kernel log sequence numbers of the
// first and last.
type AppXIDJob struct {
	Job      string `json:"job"`
	Codes    []int  `json:"codes"`
	Count    uint64 `json:"count"`
	FirstSeq uint64 `json:"first_seq"`
	LastSeq  uint64 `json:"last_seq"`
}

// attribute sets each new Xid's Jobs (the jobs holding its GPU, holders
// being job ids by GPU UUID, devices naming each GPU's UUID by bus id)
// and counts each application fault for each of them in AppJobs. It does
// no I/O.
func (st *State) attribute(xids []XID, devices []gpu.Device, holders map[string][]string) {
	uuid := map[string]string{}
	for _, d := range devices {
		uuid[d.BusID] = d.UUID
	}
	for i := range xids {
		x := &xids[i]
		x.Jobs = slices.Clone(holders[uuid[x.BusID]])
		if !IsAppFault(x.Code) {
			continue
		}
		for _, job := range x.Jobs {
			st.countAppFault(x.BusID, job, *x)
		}
	}
}

// countAppFault adds x to job's entry of bus's jobs (a new entry last,
// the oldest dropped past maxAppJobs).
func (st *State) countAppFault(bus, job string, x XID) {
	if st.AppJobs == nil {
		st.AppJobs = map[string][]AppXIDJob{}
	}
	jobs := st.AppJobs[bus]
	i := slices.IndexFunc(jobs, func(j AppXIDJob) bool { return j.Job == job })
	if i < 0 {
		jobs = append(jobs, AppXIDJob{Job: job, FirstSeq: x.Seq})
		if len(jobs) > maxAppJobs {
			jobs = slices.Clone(jobs[len(jobs)-maxAppJobs:])
		}
		i = len(jobs) - 1
	}
	j := &jobs[i]
	j.Count++
	j.LastSeq = max(j.LastSeq, x.Seq)
	if !slices.Contains(j.Codes, x.Code) {
		j.Codes = append(j.Codes, x.Code)
		slices.Sort(j.Codes)
	}
	st.AppJobs[bus] = jobs
}

// clearAppJobs forgets bus's jobs whose last fault is below seq.
func (st *State) clearAppJobs(bus string, seq uint64) {
	kept := slices.DeleteFunc(slices.Clone(st.AppJobs[bus]), func(j AppXIDJob) bool { return j.LastSeq < seq })
	if len(kept) == 0 {
		delete(st.AppJobs, bus)
		return
	}
	st.AppJobs[bus] = kept
}

// appJobsCode is the code of a GPU that faulted for many jobs.
var appJobsCode = Code{"XID_APP_JOBS", "xid", ClassInvestigate,
	"application Xids (the job's own faults, such as 13, 31, 69) on one GPU in [health] app_xid_jobs or more distinct jobs this boot: faults that follow the GPU, not a job",
	"look for what the jobs share besides the GPU (the same code, input, container); if nothing, run the vendor's diagnostics (dcgmi diag -r 3) and reset the GPU; gpuprep-health --clear ends the count"}

// appJobsPart is what bus's application faults add to its xid result: ""
// below the threshold (or with app_xid_jobs = 0), else the jobs, with
// [health] app_xid_jobs_severity (capped by the xid check's).
func appJobsPart(h config.HealthSection, jobs []AppXIDJob) (part, sev string) {
	if h.AppXIDJobs <= 0 || len(jobs) < h.AppXIDJobs {
		return "", config.HealthOff
	}
	codes := map[int]bool{}
	names := make([]string, len(jobs))
	for i, j := range jobs {
		names[i] = j.Job
		for _, c := range j.Codes {
			codes[c] = true
		}
	}
	var cs []string
	for _, c := range slices.Sorted(maps.Keys(codes)) {
		cs = append(cs, fmt.Sprint(c))
	}
	part = fmt.Sprintf("application Xids (%s) in %d distinct jobs this boot (jobs %s): the GPU's, not one job's",
		strings.Join(cs, ", "), len(jobs), strings.Join(names, ", "))
	sev = h.AppXIDJobsSeverity
	if sev == "" {
		sev = config.HealthWarn
	}
	return part, lower(sev, h.HealthSeverity("xid"))
}
