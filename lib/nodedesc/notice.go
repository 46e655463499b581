package nodedesc

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"gpuprep/lib/host"
	"gpuprep/lib/rundir"
	"gpuprep/lib/textfmt"
)

// Notice is what the prolog recorded for a job that its user should know
// (a requested profile that fell back, knobs skipped on this node, failed
// health warnings, a MIG request not honoured), one line each: the prolog
// has no other way to reach the user, so srunwrap's local rank 0 prints it.
type Notice struct {
	Job      uint64   `json:"job"`
	Messages []string `json:"messages"`
}

// noticeSub is NoticeDir's name in the run directory.
const noticeSub = "jobs"

// noticeName is the file name of job's notice in NoticeDir.
func noticeName(job uint64) string { return strconv.FormatUint(job, 10) }

// The notice file is text: "job <id>", then one message per line.

// WriteNotice stores n at NoticeDir/<job> under r, 0644, atomically,
// never through a symlink (as Write). A notice without messages removes any
// earlier file of the job instead (a requeued job that now has nothing to
// say).
func WriteNotice(r host.Root, n Notice) error { return WriteNoticeIn(nil, r, n) }

// WriteNoticeIn is WriteNotice in the open run directory rd (nil: r's,
// opened for this write): NoticeDir is made root's 0755 when missing, and
// moved aside and made afresh when another user owns it or others can
// write it, where rd allows (rundir.Dir.MkdirAt).
func WriteNoticeIn(rd *rundir.Dir, r host.Root, n Notice) error {
	if len(n.Messages) == 0 {
		return RemoveNoticeIn(rd, r, n.Job)
	}
	var w lineWriter
	w.line("job", strconv.FormatUint(n.Job, 10))
	for _, m := range n.Messages {
		w.b.WriteString(strings.ReplaceAll(m, "\n", " ") + "\n")
	}
	err := rundir.Use(rd, r, true, func(rd *rundir.Dir) error {
		jobs, err := rd.MkdirAt(noticeSub, 0o755)
		if err != nil {
			return err
		}
		jobs.Close()
		return rd.WriteAtomic(noticeSub+"/"+noticeName(n.Job), w.b.Bytes(), 0o644)
	})
	if err != nil {
		return fmt.Errorf("job notice: %w", err)
	}
	return nil
}

// LoadNotice reads job's notice under r. No file is a zero Notice and no
// error: the job has nothing to be told. The file must be one the prolog
// wrote (as for Load).
func LoadNotice(r host.Root, job uint64) (Notice, error) {
	p := NoticeDir + "/" + noticeName(job)
	data, err := readTrusted(r, p)
	if errors.Is(err, ErrMissing) {
		return Notice{}, nil
	}
	if err != nil {
		return Notice{}, fmt.Errorf("job notice: %w", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if lines[0] != "job "+strconv.FormatUint(job, 10) {
		return Notice{}, fmt.Errorf("job notice: %s: first line %q, want \"job %d\"", r.Path(p), textfmt.Clip(lines[0], 60), job)
	}
	return Notice{Job: job, Messages: lines[1:]}, nil
}

// RemoveNotice removes job's notice under r; no file (or no directory) is
// not an error.
func RemoveNotice(r host.Root, job uint64) error { return RemoveNoticeIn(nil, r, job) }

// RemoveNoticeIn is RemoveNotice in the open run directory rd (nil: r's,
// opened for this removal when it exists).
func RemoveNoticeIn(rd *rundir.Dir, r host.Root, job uint64) error {
	remove := func(rd *rundir.Dir) error { return rd.Remove(noticeSub + "/" + noticeName(job)) }
	var err error
	if rd != nil {
		err = remove(rd)
	} else if rd, err = rundir.Open(r, rundir.Options{NoCreate: true}); err == nil {
		err = remove(rd)
		rd.Close()
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("job notice: %w", err)
	}
	return nil
}

// ForgetNotices removes, in the open run directory rd, the notices of
// every job keep does not keep (a job whose epilog was killed before it
// removed them, and that no hook will run for again), and returns those
// jobs. A name in NoticeDir that is not a job id is left alone (a
// temporary file is rundir.Dir.Sweep's). No NoticeDir is no error.
func ForgetNotices(rd *rundir.Dir, keep func(job uint64) bool) ([]uint64, error) {
	dir, err := rd.OpenDir(noticeSub)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("job notices: %w", err)
	}
	names, err := dir.Names()
	dir.Close()
	if err != nil {
		return nil, fmt.Errorf("job notices: %w", err)
	}
	var gone []uint64
	for _, n := range names {
		job, perr := strconv.ParseUint(n, 10, 64)
		if perr != nil || noticeName(job) != n || keep(job) {
			continue
		}
		if err := rd.Remove(noticeSub + "/" + n); err != nil {
			return gone, fmt.Errorf("job notices: %w", err)
		}
		gone = append(gone, job)
	}
	return gone, nil
}
