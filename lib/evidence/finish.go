package evidence

// Finish completes a running record with the epilog's snapshot end: End
// is set, Running cleared, and GPUs and Total are Diff(r.Start, end,
// r.Shared).
func (r *Record) Finish(end Snapshot) {
	r.End = &end
	r.Running = false
	r.GPUs, r.Total = Diff(r.Start, end, r.Shared)
}

// SoFar is a copy of r, the record of a running job, with its figures
// from r.Start to now: End is &now and GPUs and Total are Diff(r.Start,
// now, r.Shared); Running stays as it is (true for a running job). r is
// not changed.
func SoFar(r Record, now Snapshot) Record {
	r.End = &now
	r.GPUs, r.Total = Diff(r.Start, now, r.Shared)
	return r
}
