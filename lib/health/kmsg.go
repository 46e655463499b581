package health

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"gpuprep/lib/host"
)

// KmsgPath is the kernel log as records.
const KmsgPath = "/dev/kmsg"

// Record is one kernel log record.
type Record struct {
	Seq  uint64 `json:"seq"`
	USec uint64 `json:"usec"` // since boot
	Msg  string `json:"msg"`
}

// ReadKmsg reads the kernel log's records from /dev/kmsg, keeping those
// whose message contains keep (every one for ""), and returns the highest
// sequence number seen (the watermark a later run starts after).
//
// On a node /dev/kmsg is a character device: it is opened O_NONBLOCK and
// read one record per read(2) until EAGAIN (EPIPE, records overwritten
// while reading, is skipped). In a fixture root it is a regular file of the
// same records, one a line ("PRIO,SEQ,USEC,FLAGS;MSG"; continuation lines,
// which start with a space, are ignored). A record that does not parse is
// an error naming the file and line.
func ReadKmsg(r host.Root, keep string) (recs []Record, last uint64, err error) {
	full := r.Path(KmsgPath)
	fd, err := unix.Open(full, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, 0, &fs.PathError{Op: "open", Path: full, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, 0, fmt.Errorf("%s: %w", KmsgPath, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFREG {
		b, err := r.ReadFile(KmsgPath)
		if err != nil {
			return nil, 0, err
		}
		return parseKmsgFile(b, keep)
	}
	buf := make([]byte, 16<<10)
	for {
		n, err := unix.Read(fd, buf)
		switch {
		case errors.Is(err, syscall.EAGAIN):
			return recs, last, nil
		case errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return nil, 0, fmt.Errorf("read %s: %w", KmsgPath, err)
		case n == 0:
			return recs, last, nil
		}
		rec, err := parseRecord(buf[:n])
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", KmsgPath, err)
		}
		last = max(last, rec.Seq)
		if keep == "" || strings.Contains(rec.Msg, keep) {
			recs = append(recs, rec)
		}
	}
}

func parseKmsgFile(b []byte, keep string) (recs []Record, last uint64, err error) {
	for i, line := range bytes.Split(b, []byte("\n")) {
		if len(line) == 0 || line[0] == ' ' {
			continue
		}
		rec, err := parseRecord(line)
		if err != nil {
			return nil, 0, fmt.Errorf("%s:%d: %w", KmsgPath, i+1, err)
		}
		last = max(last, rec.Seq)
		if keep == "" || strings.Contains(rec.Msg, keep) {
			recs = append(recs, rec)
		}
	}
	return recs, last, nil
}

// parseRecord parses "PRIO,SEQ,USEC,FLAGS[,...];MSG[\n dict lines]".
func parseRecord(b []byte) (Record, error) {
	head, msg, ok := bytes.Cut(b, []byte(";"))
	_, rest, ok1 := bytes.Cut(head, []byte(","))
	seqB, rest, ok2 := bytes.Cut(rest, []byte(","))
	usecB, _, _ := bytes.Cut(rest, []byte(","))
	if !ok || !ok1 || !ok2 {
		return Record{}, fmt.Errorf("%q is not a kmsg record \"PRIO,SEQ,USEC,FLAGS;MSG\"", clip(string(b)))
	}
	seq, err1 := strconv.ParseUint(string(seqB), 10, 64)
	usec, err2 := strconv.ParseUint(string(usecB), 10, 64)
	if err1 != nil || err2 != nil {
		return Record{}, fmt.Errorf("%q: sequence and time must be numbers", clip(string(head)))
	}
	msg, _, _ = bytes.Cut(msg, []byte("\n"))
	return Record{Seq: seq, USec: usec, Msg: string(msg)}, nil
}
