package drift

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"gpuprep/lib/plural"
	"gpuprep/lib/state"
)

// MaxLine bounds one line of a drift file; a longer line is garbage.
const MaxLine = 1 << 20

// Append writes recs to the spool's drift file, one JSON object per line, in
// one write. A record without a time gets the current time, one without a
// kind is KindDrift; a record without a knob is refused (nothing written).
//
// Appending is idempotent: a record identical to one already among the
// file's most recent lines (dedupWindow bytes), time included, is not
// written again. A retried or rolled-forward epilog appends the records its
// journal holds, so one job's drift is recorded once however often the
// epilog is interrupted.
func Append(sp *state.Spool, recs []Record) error {
	lines := make([][]byte, 0, len(recs))
	now := time.Now().UTC()
	for _, r := range recs {
		if r.Knob == "" {
			return fmt.Errorf("drift record for job %q on %q has no knob", r.Job, r.Node)
		}
		if r.Time.IsZero() {
			r.Time = now
		}
		if r.Kind == "" {
			r.Kind = KindDrift
		}
		b, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("encode drift record: %w", err)
		}
		lines = append(lines, b)
	}
	if len(lines) == 0 {
		return nil
	}
	seen, err := recentLines(sp)
	if err != nil {
		return err
	}
	var fresh [][]byte
	for _, l := range lines {
		if !seen[string(l)] {
			fresh = append(fresh, l)
			seen[string(l)] = true
		}
	}
	return sp.AppendLines(FileName, fresh)
}

// dedupWindow is how far back from the end of the drift file Append looks
// for records it is about to write again.
const dedupWindow = 1 << 20

// recentLines returns the whole lines in the last dedupWindow bytes of the
// drift file.
func recentLines(sp *state.Spool) (map[string]bool, error) {
	seen := map[string]bool{}
	f, err := sp.OpenRead(FileName)
	if errors.Is(err, os.ErrNotExist) {
		return seen, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	off := max(0, fi.Size()-dedupWindow)
	data, err := io.ReadAll(io.NewSectionReader(f, off, fi.Size()-off))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	parts := strings.Split(string(data), "\n")
	if off > 0 {
		parts = parts[1:] // cut into a line
	}
	for _, p := range parts {
		seen[p] = true
	}
	return seen, nil
}

// Skipped counts the lines Read and ReadFrom left out.
type Skipped struct {
	Garbage int   `json:"garbage"`         // whole lines that are not records
	Torn    int   `json:"torn"`            // an unterminated last line (a write cut short)
	Lines   []int `json:"lines,omitempty"` // line numbers of the first few skipped
}

// Total is the number of lines skipped.
func (s Skipped) Total() int { return s.Garbage + s.Torn }

// String is a one-line note for a report of the spool's drift file ("" when
// nothing was skipped).
func (s Skipped) String() string { return s.In(FileName) }

// In is String's note naming file: "skipped 2 unreadable lines in
// fleet/gpu01.jsonl (lines 3, 7)"; "" when nothing was skipped.
func (s Skipped) In(file string) string {
	if s.Total() == 0 {
		return ""
	}
	parts := []string{}
	if s.Garbage > 0 {
		parts = append(parts, plural.Count(s.Garbage, "unreadable line", "unreadable lines"))
	}
	if s.Torn > 0 {
		parts = append(parts, "a torn last line")
	}
	nums := make([]string, len(s.Lines))
	for i, n := range s.Lines {
		nums[i] = fmt.Sprint(n)
	}
	return fmt.Sprintf("skipped %s in %s (%s %s)", strings.Join(parts, " and "), file, plural.Word(len(nums), "line", "lines"), strings.Join(nums, ", "))
}

func (s *Skipped) add(line int, torn bool) {
	if torn {
		s.Torn++
	} else {
		s.Garbage++
	}
	if len(s.Lines) < 10 {
		s.Lines = append(s.Lines, line)
	}
}

// Read returns the drift records of the spool's drift file at or after
// since (all when since is zero), in file order: ReadFrom over the file. A
// missing drift file is no records and no error.
func Read(sp *state.Spool, since time.Time) ([]Record, Skipped, error) {
	f, err := sp.OpenRead(FileName)
	if errors.Is(err, os.ErrNotExist) {
		return nil, Skipped{}, nil
	}
	if err != nil {
		return nil, Skipped{}, err
	}
	defer f.Close()
	recs, skipped, err := ReadFrom(f, since)
	if err != nil {
		return recs, skipped, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	return recs, skipped, nil
}

// ReadFrom returns the drift records of r, one JSON Record a line, at or
// after since (all when since is zero), in order. It never fails over a bad
// line: a line that is not a record (no time or knob, not JSON, longer than
// MaxLine) is skipped and counted, and so is a torn last line; blank lines
// are ignored. Its error is r's read error as is: the caller names the
// file.
func ReadFrom(r io.Reader, since time.Time) ([]Record, Skipped, error) {
	var skipped Skipped
	var recs []Record
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, terminated, tooLong, err := readLine(br)
		if err != nil && err != io.EOF {
			return recs, skipped, err
		}
		if !terminated && len(line) == 0 && !tooLong {
			return recs, skipped, nil // end of file
		}
		if terminated && !tooLong && len(strings.TrimSpace(string(line))) == 0 {
			continue // a blank line holds nothing to lose
		}
		rec, ok := parse(line, tooLong)
		switch {
		case !ok:
			skipped.add(n, !terminated)
		case since.IsZero() || !rec.Time.Before(since):
			recs = append(recs, rec)
		}
		if !terminated {
			return recs, skipped, nil
		}
	}
}

// parse decodes one line; ok is false for anything but a usable record.
// (An unterminated last line that parses whole lost only its "\n".)
func parse(line []byte, tooLong bool) (Record, bool) {
	var rec Record
	if tooLong {
		return rec, false
	}
	if err := json.Unmarshal(line, &rec); err != nil || rec.Knob == "" || rec.Time.IsZero() {
		return rec, false
	}
	return rec, true
}

// readLine reads one line without its "\n"; terminated is false for a last
// line with no "\n" (or none at all); tooLong drops lines over MaxLine.
func readLine(r *bufio.Reader) (line []byte, terminated, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > MaxLine {
			tooLong, line = true, nil
		} else if !tooLong {
			line = append(line, chunk...)
		}
		switch err {
		case bufio.ErrBufferFull:
			continue
		case nil:
			if !tooLong {
				line = line[:len(line)-1]
			}
			return line, true, tooLong, nil
		default:
			return line, false, tooLong, err
		}
	}
}
