package evfile

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"gpuprep/lib/dirfd"
)

// StampLayout is the job's start in a record's name, in UTC.
const StampLayout = "20060102T150405Z"

// ext ends every record's name.
const ext = ".json"

// CheckJobID refuses what is not a Slurm job id: decimal digits, no
// leading zero, not 0, at most 2^64-1 (an array or heterogeneous job's
// SLURM_JOB_ID is numeric too). The error names the value.
func CheckJobID(id string) error {
	if id == "" || id[0] < '1' || id[0] > '9' {
		return fmt.Errorf("job id %q: want a number from 1 without leading zeros", id)
	}
	if _, err := strconv.ParseUint(id, 10, 64); err != nil {
		return fmt.Errorf("job id %q: want a number from 1 without leading zeros (below 2^64)", id)
	}
	return nil
}

// RecordName is the name of the record of the run of job id that started
// at start: "<id>-<start UTC, StampLayout>.json". The id is checked
// (CheckJobID) before any name is made of it; a zero start is refused.
func RecordName(id string, start time.Time) (string, error) {
	if err := CheckJobID(id); err != nil {
		return "", err
	}
	if start.IsZero() {
		return "", fmt.Errorf("job %s: the record has no start time", id)
	}
	return id + "-" + start.UTC().Format(StampLayout) + ext, nil
}

// parseName reads a record's name back: the job id and the start stamp;
// ok false for any other name (a temporary file, a stranger's file).
func parseName(name string) (id, stamp string, ok bool) {
	base, found := strings.CutSuffix(name, ext)
	if !found {
		return "", "", false
	}
	id, stamp, found = strings.Cut(base, "-")
	if !found || CheckJobID(id) != nil || len(stamp) != len(StampLayout) {
		return "", "", false
	}
	if _, err := time.Parse(StampLayout, stamp); err != nil {
		return "", "", false
	}
	return id, stamp, true
}

// isTemp says whether name is a temporary file of a record's write
// (".<record name>.tmp-<pid>"), left behind by a writer that died.
func isTemp(name string) bool {
	if _, ok := dirfd.TmpPID(name); !ok {
		return false
	}
	_, _, ok := parseName(name[1:strings.LastIndex(name, dirfd.TmpMarker)])
	return ok
}

// IsRecordName says whether name (a base name) is an evidence record's:
// "<jobid>-<start>.json".
func IsRecordName(name string) bool {
	_, _, ok := parseName(name)
	return ok
}
