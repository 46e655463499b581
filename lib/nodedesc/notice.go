package nodedesc

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"gpuprep/lib/crashpoint"
	"gpuprep/lib/host"
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

// noticeName is the file name of job's notice in NoticeDir.
func noticeName(job uint64) string { return strconv.FormatUint(job, 10) }

// The notice file is text: "job <id>", then one message per line.

// WriteNotice stores n at NoticeDir/<job> under r, 0644, atomically,
// never through a symlink (as Write). A notice without messages removes any
// earlier file of the job instead (a requeued job that now has nothing to
// say).
func WriteNotice(r host.Root, n Notice) error {
	if len(n.Messages) == 0 {
		return RemoveNotice(r, n.Job)
	}
	var w lineWriter
	w.line("job", strconv.FormatUint(n.Job, 10))
	for _, m := range n.Messages {
		w.b.WriteString(strings.ReplaceAll(m, "\n", " ") + "\n")
	}
	data := w.b.Bytes()
	fd, err := openDir(r, NoticeDir, true)
	if err != nil {
		return fmt.Errorf("job notice: %w", err)
	}
	defer unix.Close(fd)
	if err := writeAt(fd, r.Path(NoticeDir), noticeName(n.Job), data); err != nil {
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
func RemoveNotice(r host.Root, job uint64) error {
	fd, err := openDir(r, NoticeDir, false)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("job notice: %w", err)
	}
	defer unix.Close(fd)
	name := noticeName(job)
	crashpoint.HitAt("run-unlink", NoticeDir, name)
	if err := unix.Unlinkat(fd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("job notice: %w", &os.PathError{Op: "remove", Path: r.Path(NoticeDir) + "/" + name, Err: err})
	}
	return nil
}
