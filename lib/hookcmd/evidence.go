package hookcmd

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"gpuprep/lib/cli"
	"gpuprep/lib/config"
	"gpuprep/lib/evidence"
	"gpuprep/lib/evidence/evfile"
	"gpuprep/lib/gpu"
	"gpuprep/lib/hook"
	"gpuprep/lib/host"
)

// jobReport is gpuprep-epilog --report --job ID: the job's evidence on this
// node, read from <state_dir>/jobs only (anyone may run it: the job's user
// reads their own record through its ACL entry). A running job's record
// is shown "so far": its GPUs' counters now against the prolog's. With
// --from it merges the parts of a multi-node job collected from many nodes
// instead, and opens nothing of this node.
func jobReport(f *flags, cfg *config.Config, stdout, stderr io.Writer, prog string) int {
	bad := func(err error) int { return cli.Fail(stderr, prog, cli.ExitBadInput, err) }
	if !f.report {
		return bad(fmt.Errorf("--job goes with --report"))
	}
	if len(f.fleet.from) > 0 {
		return mergedJobReport(f, stdout, stderr, prog)
	}
	dir, err := evfile.OpenReader(stateDirOf(f, cfg))
	if err != nil {
		return bad(err)
	}
	defer dir.Close()
	recs, err := dir.Find(f.job)
	if err != nil {
		return bad(err)
	}
	if len(recs) == 0 {
		return bad(fmt.Errorf("no evidence of job %s on this node in %s/jobs: it ran no GPUs here, [evidence] is off, or its record was removed", f.job, stateDirOf(f, cfg)))
	}
	r := recs[0] // the newest run of the job (a requeued job keeps its id)
	if r.Running {
		r = soFar(f, cfg, r, stderr, prog)
	}
	return writeJobReport(f, stdout, stderr, prog, r)
}

// soFar is a running job's record with its GPUs' counters read now; the
// record as it is, with a warning, when they cannot be read.
func soFar(f *flags, cfg *config.Config, r evidence.Record, stderr io.Writer, prog string) evidence.Record {
	b, err := f.common.OpenGPU(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "%s: warning: the job's GPUs cannot be read now: %v\n", prog, err)
		return r
	}
	gpu.Light(b)
	cr, ok := gpu.As[gpu.CountersReader](b)
	if !ok {
		fmt.Fprintf(stderr, "%s: warning: the %s GPU backend reads no counters\n", prog, b.Name())
		return r
	}
	devs, err := b.Devices()
	if err != nil {
		fmt.Fprintf(stderr, "%s: warning: listing the GPUs: %v\n", prog, err)
		return r
	}
	boot, _ := host.ReadBootID(f.common.HostRoot())
	now := evidence.Take(cr, jobDevices(devs, r.Start), time.Now(), boot, hook.DriverVersion(b))
	return evidence.SoFar(r, now)
}

// jobDevices are devs that the snapshot start lists, by UUID.
func jobDevices(devs []gpu.Device, start evidence.Snapshot) []gpu.Device {
	var out []gpu.Device
	for _, g := range start.GPUs {
		for _, d := range devs {
			if d.UUID == g.UUID {
				out = append(out, d)
			}
		}
	}
	return out
}

// mergedJobReport is --report --job ID --from PATH...: the parts of job
// ID among the records PATH names, merged (evidence.Merge).
func mergedJobReport(f *flags, stdout, stderr io.Writer, prog string) int {
	recs, errs := evfile.ReadFiles(evidencePaths(f.fleet.from)...)
	for _, err := range errs {
		fmt.Fprintf(stderr, "%s: warning: %v\n", prog, err)
	}
	var parts []evidence.Record
	for _, r := range recs {
		if r.Job.ID == f.job {
			parts = append(parts, r)
		}
	}
	if len(parts) == 0 {
		return cli.Fail(stderr, prog, cli.ExitBadInput, fmt.Errorf("--from: no evidence of job %s in %d records read", f.job, len(recs)))
	}
	v, err := evidence.Merge(parts)
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitBadInput, err)
	}
	if f.common.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(v)
	} else {
		err = evidence.WriteJobView(stdout, v)
	}
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitMismatch, err)
	}
	return cli.ExitOK
}

// writeJobReport prints one record as a table or (--json) JSON.
func writeJobReport(f *flags, stdout, stderr io.Writer, prog string, r evidence.Record) int {
	var err error
	if f.common.JSON {
		err = evidence.WriteReportJSON(stdout, r)
	} else {
		err = evidence.WriteReport(stdout, r)
	}
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitMismatch, err)
	}
	return cli.ExitOK
}

// stateDirOf is --state-dir, else general.state_dir.
func stateDirOf(f *flags, cfg *config.Config) string {
	if f.stateDir != "" {
		return f.stateDir
	}
	return cfg.General.StateDir
}

// readFleetEvidence reads the job evidence records among --from's paths
// (evidencePaths), finished ones only, of jobs that started within
// --since; unreadable ones are warned about on stderr.
func readFleetEvidence(f *flags, stderr io.Writer, prog string) []evidence.Record {
	recs, errs := evfile.ReadFiles(evidencePaths(f.fleet.from)...)
	for _, err := range errs {
		fmt.Fprintf(stderr, "%s: warning: %v\n", prog, err)
	}
	since := sinceTime(f)
	var out []evidence.Record
	for _, r := range recs {
		if !r.Running && !r.Job.Start.Before(since) {
			out = append(out, r)
		}
	}
	return out
}

// evidencePaths are the places among paths that may hold evidence
// records: a record file itself; in a directory, its jobs/ and each
// <node>/jobs/ (copies of nodes' state dirs, one level down), or the
// directory itself when it holds records directly.
func evidencePaths(paths []string) []string {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		switch {
		case err != nil:
			continue // fleet.Read names it
		case !st.IsDir():
			if evfile.IsRecordName(filepath.Base(p)) {
				out = append(out, p)
			}
			continue
		}
		if holdsRecords(p) {
			out = append(out, p)
		}
		cands, _ := filepath.Glob(filepath.Join(p, "*", evfile.Sub))
		for _, c := range append([]string{filepath.Join(p, evfile.Sub)}, cands...) {
			if st, err := os.Stat(c); err == nil && st.IsDir() {
				out = append(out, c)
			}
		}
	}
	return out
}

// holdsRecords says whether directory dir holds an evidence record.
func holdsRecords(dir string) bool {
	names, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, n := range names {
		if evfile.IsRecordName(filepath.Base(n)) {
			return true
		}
	}
	return false
}
