package evfile

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"golang.org/x/sys/unix"

	"gpuprep/lib/dirfd"
	"gpuprep/lib/evidence"
)

// Find reads every record of job id (checked: CheckJobID), newest start
// first. A record that cannot be read is left out and named in err, joined
// (errors.Join) with the others, next to the records that could: a symlink
// or anything but a regular file in a record's name (never followed or
// opened), a file not root's or writable by group or others, one the
// caller may not read (another user's job), one of a newer format (ErrNewer:
// "written by a newer gpuprep"), one that is not JSON, one whose content
// is another job's or run's than its name says. No record is nil, nil.
func (d *Dir) Find(id string) ([]evidence.Record, error) {
	if err := CheckJobID(id); err != nil {
		return nil, fmt.Errorf("find evidence records in %s: %w", d.d.Path(), err)
	}
	recs, errs := d.read(func(jobID string) bool { return jobID == id })
	return recs, errors.Join(errs...)
}

// All reads every record of the directory, newest start first, and says
// in errs why each file in a record's name that it left out was (as Find).
func (d *Dir) All() ([]evidence.Record, []error) {
	return d.read(func(string) bool { return true })
}

// read reads the records whose job id want accepts, newest first.
func (d *Dir) read(want func(id string) bool) ([]evidence.Record, []error) {
	names, err := d.d.Names()
	if err != nil {
		return nil, []error{fmt.Errorf("evidence records: %w", err)}
	}
	var recs []evidence.Record
	var errs []error
	for _, name := range names {
		if id, _, ok := parseName(name); !ok || !want(id) {
			continue
		}
		r, err := d.readOne(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		recs = append(recs, r)
	}
	sortNewest(recs)
	return recs, errs
}

// readOne reads the record name: a regular file of root's (or the
// reader's own) that group and others cannot write, holding what its name
// says.
func (d *Dir) readOne(name string) (evidence.Record, error) {
	data, err := d.d.ReadFile(name, dirfd.Read{Max: maxRecord, Check: func(st *unix.Stat_t) error {
		return readerCheck(d.d.Join(name), st)
	}})
	if err != nil {
		return evidence.Record{}, err
	}
	r, err := decode(d.d.Join(name), data)
	if err != nil {
		return r, err
	}
	if want, err := RecordName(r.Job.ID, r.Job.Start); err != nil || want != name {
		return r, fmt.Errorf("%s: holds job %q started %s, not what its name says", d.d.Join(name), r.Job.ID, r.Job.Start.UTC().Format(StampLayout))
	}
	return r, nil
}

// decode reads the record file path holds (data): its format first, so
// that a newer one is named as such rather than as bad JSON.
func decode(path string, data []byte) (evidence.Record, error) {
	var head struct {
		Format *int `json:"format"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return evidence.Record{}, fmt.Errorf("%s: not an evidence record: %w", path, err)
	}
	switch {
	case head.Format == nil || *head.Format < 1:
		return evidence.Record{}, fmt.Errorf("%s: not an evidence record (no format)", path)
	case *head.Format > evidence.Format:
		return evidence.Record{}, fmt.Errorf("%s: format %d, %w; this one reads format %d at most", path, *head.Format, ErrNewer, evidence.Format)
	}
	var r evidence.Record
	if err := json.Unmarshal(data, &r); err != nil {
		return evidence.Record{}, fmt.Errorf("%s: not an evidence record: %w", path, err)
	}
	return r, nil
}

// sortNewest sorts records by start, newest first, then by job id
// (numbers: shorter first).
func sortNewest(recs []evidence.Record) {
	slices.SortStableFunc(recs, func(a, b evidence.Record) int {
		return cmp.Or(b.Job.Start.Compare(a.Job.Start), cmp.Compare(len(a.Job.ID), len(b.Job.ID)), cmp.Compare(a.Job.ID, b.Job.ID))
	})
}
