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
	"gpuprep/lib/textfmt"
)

// KmsgPath is the kernel log as records.
const KmsgPath = "/dev/kmsg"

// Record is one kernel log record.
type Record struct {
	// Prio is the record's syslog priority, (facility << 3) | level, as
	// /dev/kmsg prints it first. Facility 0 (LOG_KERN) is the kernel's
	// own: the kernel gives every record written to /dev/kmsg from user
	// space a non-zero facility (LOG_USER unless the writer asked for
	// another), so only the kernel and its drivers write facility 0.
	Prio uint64 `json:"prio"`
	Seq  uint64 `json:"seq"`
	USec uint64 `json:"usec"` // since boot
	Msg  string `json:"msg"`
}

// Facility is the record's syslog facility: 0 for the kernel's records.
func (r Record) Facility() uint64 { return r.Prio >> 3 }

// FromKernel says whether the kernel or a driver logged the record (its
// facility is LOG_KERN), not a user-space writer of /dev/kmsg.
func (r Record) FromKernel() bool { return r.Facility() == 0 }

// Gap is a run of kernel log records that were lost before gpuprep read
// them: sequence numbers From to To-1 (To 0: up to an end not known).
type Gap struct {
	From uint64 `json:"from"`
	To   uint64 `json:"to,omitempty"`
}

// String is "120-339", "120", or "120 on" (end not known).
func (g Gap) String() string {
	switch {
	case g.To == 0:
		return fmt.Sprintf("%d on", g.From)
	case g.To == g.From+1:
		return strconv.FormatUint(g.From, 10)
	default:
		return fmt.Sprintf("%d-%d", g.From, g.To-1)
	}
}

// KernelLog is one read of the kernel log.
type KernelLog struct {
	Records []Record // the records kept
	// N is how many records were read, kept or not; First and Last are the
	// lowest and highest sequence numbers read (meaningless when N is 0).
	N           int
	First, Last uint64
	// Lost are the sequence numbers missing between two records read: the
	// ring buffer overwrote them before this read reached them.
	Lost []Gap
}

// add takes the next record read: a sequence number above the one
// expected is a gap (records lost), one at or below it is an error (the
// kernel numbers records in order).
func (k *KernelLog) add(rec Record, keep string) error {
	if k.N > 0 {
		switch next := k.Last + 1; {
		case rec.Seq < next:
			return fmt.Errorf("record %d after record %d: records are not in sequence order", rec.Seq, k.Last)
		case rec.Seq > next:
			k.Lost = append(k.Lost, Gap{From: next, To: rec.Seq})
		}
	} else {
		k.First = rec.Seq
	}
	k.N++
	k.Last = rec.Seq
	if keep == "" || strings.Contains(rec.Msg, keep) {
		k.Records = append(k.Records, rec)
	}
	return nil
}

// ReadKmsg reads the kernel log's records from /dev/kmsg, keeping those
// whose message contains keep (every one for ""), and says which sequence
// numbers it read and which it found missing.
//
// On a node /dev/kmsg is a character device: it is opened O_NONBLOCK (at
// the oldest record the ring buffer still holds) and read one record per
// read(2) until EAGAIN. A read that fails with EPIPE means the records
// from the reader's position on were overwritten; the next read returns
// the oldest one left, so the sequence numbers jump, and the jump is a
// Gap in Lost (an EPIPE with no record after it, a Gap of unknown end).
//
// In a fixture root /dev/kmsg is a regular file of the same records, one a
// line ("PRIO,SEQ,USEC,FLAGS;MSG"; continuation lines, which start with a
// space, are ignored). A jump in sequence numbers between two lines is
// what an EPIPE leaves (records lost while reading); a first sequence
// number above the state's watermark is records lost between runs. A
// record that does not parse, or a sequence number that does not grow, is
// an error naming the file and line.
func ReadKmsg(r host.Root, keep string) (KernelLog, error) {
	full := r.Path(KmsgPath)
	fd, err := unix.Open(full, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return KernelLog{}, &fs.PathError{Op: "open", Path: full, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return KernelLog{}, fmt.Errorf("%s: %w", KmsgPath, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFREG {
		b, err := r.ReadFile(KmsgPath)
		if err != nil {
			return KernelLog{}, err
		}
		return parseKmsgFile(b, keep)
	}
	return readKmsgDevice(func(b []byte) (int, error) { return unix.Read(fd, b) }, keep)
}

// readKmsgDevice reads records with read until EAGAIN (or end of file).
func readKmsgDevice(read func([]byte) (int, error), keep string) (KernelLog, error) {
	var k KernelLog
	buf := make([]byte, 16<<10)
	epipe := false
	for {
		n, err := read(buf)
		switch {
		case errors.Is(err, syscall.EAGAIN), err == nil && n == 0:
			if epipe {
				// Records were overwritten and none came after: lost from
				// the next one expected, end unknown.
				from := uint64(0)
				if k.N > 0 {
					from = k.Last + 1
				}
				k.Lost = append(k.Lost, Gap{From: from})
			}
			return k, nil
		case errors.Is(err, syscall.EPIPE):
			epipe = true
			continue
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return KernelLog{}, fmt.Errorf("read %s: %w", KmsgPath, err)
		}
		rec, err := parseRecord(buf[:n])
		if err == nil {
			err = k.add(rec, keep)
		}
		if err != nil {
			return KernelLog{}, fmt.Errorf("%s: %w", KmsgPath, err)
		}
		epipe = false
	}
}

func parseKmsgFile(b []byte, keep string) (KernelLog, error) {
	var k KernelLog
	for i, line := range bytes.Split(b, []byte("\n")) {
		if len(line) == 0 || line[0] == ' ' {
			continue
		}
		rec, err := parseRecord(line)
		if err == nil {
			err = k.add(rec, keep)
		}
		if err != nil {
			return KernelLog{}, fmt.Errorf("%s:%d: %w", KmsgPath, i+1, err)
		}
	}
	return k, nil
}

// parseRecord parses "PRIO,SEQ,USEC,FLAGS[,...];MSG[\n dict lines]" (the
// kernel's Documentation/ABI/testing/dev-kmsg). The kernel escapes every
// control character of MSG as \xNN, so a record is one line and its
// message cannot start a record of its own.
func parseRecord(b []byte) (Record, error) {
	head, msg, ok := bytes.Cut(b, []byte(";"))
	prioB, rest, ok1 := bytes.Cut(head, []byte(","))
	seqB, rest, ok2 := bytes.Cut(rest, []byte(","))
	usecB, _, _ := bytes.Cut(rest, []byte(","))
	if !ok || !ok1 || !ok2 {
		return Record{}, fmt.Errorf("%q is not a kmsg record \"PRIO,SEQ,USEC,FLAGS;MSG\"", textfmt.Fit(string(b), 60))
	}
	prio, err0 := strconv.ParseUint(string(prioB), 10, 32)
	seq, err1 := strconv.ParseUint(string(seqB), 10, 64)
	usec, err2 := strconv.ParseUint(string(usecB), 10, 64)
	if err0 != nil || err1 != nil || err2 != nil {
		return Record{}, fmt.Errorf("%q: priority, sequence and time must be numbers", textfmt.Fit(string(head), 60))
	}
	msg, _, _ = bytes.Cut(msg, []byte("\n"))
	return Record{Prio: prio, Seq: seq, USec: usec, Msg: string(msg)}, nil
}
