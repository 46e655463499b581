package nccl

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"gpuprep/lib/host"
)

// maxTopoFile bounds an NCCL topology file read: the XML of a large node
// (NCCL_TOPO_DUMP_FILE of 8 GPUs and 18 HCAs) is some tens of KiB.
const maxTopoFile = 16 << 20

// ErrNotTopology is wrapped by CheckTopoFile's error for a file it read
// that is not an NCCL topology (not XML, or a root other than <system>).
var ErrNotTopology = errors.New("not an NCCL topology")

// NotRegularError is CheckTopoFile's error for a path that is not a
// regular file (a FIFO, a device, a socket, a directory): it is never
// read, since a FIFO without a writer would block the reader for ever. It
// wraps host.ErrNotRegular.
type NotRegularError struct {
	Path string // as the caller named it
	Kind string // "a FIFO", "a directory", ...
}

func (e *NotRegularError) Error() string { return e.Path + ": " + e.Kind + ", not a regular file" }
func (e *NotRegularError) Unwrap() error { return host.ErrNotRegular }

// CheckTopoFile reads the NCCL topology file at p (through the root) and
// parses it: XML whose root element is <system>, as NCCL_TOPO_FILE wants.
// It returns the number of CPUs (<cpu>) it describes. A symlink is
// followed, as NCCL follows it, but what it opens must be a regular file
// (*NotRegularError otherwise) of at most 16 MiB: it is opened without
// blocking and checked with fstat before any read, so it never waits on a
// FIFO. Every error names p; a missing file wraps fs.ErrNotExist, a file
// that does not parse ErrNotTopology.
func CheckTopoFile(r host.Root, p string) (cpus int, err error) {
	b, fi, err := host.ReadRegular(r.Path(p), maxTopoFile)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the rooted path: p names the file
		}
		if errors.Is(err, host.ErrNotRegular) && fi != nil {
			return 0, &NotRegularError{Path: p, Kind: fileKind(fi.Mode())}
		}
		return 0, fmt.Errorf("%s: %w", p, err)
	}
	d := xml.NewDecoder(bytes.NewReader(b))
	root := ""
	for {
		tok, err := d.Token()
		if err != nil {
			if root == "" {
				return 0, notTopology("%s: not an NCCL topology (XML with a <system> root): %v", p, err)
			}
			if err == io.EOF {
				return cpus, nil
			}
			line, _ := d.InputPos()
			return 0, notTopology("%s:%d: %v", p, line, err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
				if root != "system" {
					return 0, notTopology("%s: root element <%s>, want <system>", p, root)
				}
			}
			if se.Name.Local == "cpu" {
				cpus++
			}
		}
	}
}

// topologyError is a file that was read and is not an NCCL topology.
type topologyError struct{ msg string }

func (e *topologyError) Error() string        { return e.msg }
func (e *topologyError) Is(target error) bool { return target == ErrNotTopology }

func notTopology(format string, a ...any) error {
	return &topologyError{fmt.Sprintf(format, a...)}
}

// fileKind names what a file that is not regular is.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return "not a plain file"
}
