package nccl

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"gpuprep/lib/host"
	"gpuprep/lib/srunconf"
)

// maxTopoFile bounds an NCCL topology file read: the XML of a large node
// (NCCL_TOPO_DUMP_FILE of 8 GPUs and 18 HCAs) is some tens of KiB.
const maxTopoFile = 16 << 20

// TopoProbeMax is how much of NCCL_TOPO_FILE srunwrap reads in each rank:
// the XML NCCL writes for a large node (NCCL_TOPO_DUMP_FILE of 8 GPUs and
// 18 HCAs) is some tens of KiB, and Go's XML decoder takes about 10 ms
// for 64 KiB of the densest XML on a slow core, so a rank never waits
// long on the file, whatever it holds.
const TopoProbeMax = 64 << 10

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
// that does not parse ErrNotTopology. It reads the whole file: srunwrap,
// which runs in every rank, reads only its start (ProbeTopoFile).
func CheckTopoFile(r host.Root, p string) (cpus int, err error) {
	b, fi, err := host.ReadRegular(r.Path(p), maxTopoFile)
	if err != nil {
		return 0, openError(p, fi, err)
	}
	return parseTopo(p, b, false)
}

// TopoHead is what ProbeTopoFile learnt of a topology file.
type TopoHead struct {
	Size    int64 // the file's size, from fstat
	Checked int   // how many bytes of it were read and parsed
}

// Partial says only the start of the file was checked.
func (h TopoHead) Partial() bool { return int64(h.Checked) < h.Size }

// ProbeTopoFile is CheckTopoFile bounded for srunwrap, which runs it in
// every rank: it opens the NCCL topology file at p (through the root)
// without blocking, checks with fstat that it is a regular file, reads at
// most max bytes and checks that they are an NCCL topology (XML with a
// <system> root, well formed as far as they go). The rest of a larger
// file is never read: TopoHead.Partial says so. Errors are those of
// CheckTopoFile, without p in front (*NotRegularError aside): the caller
// names the file.
func ProbeTopoFile(r host.Root, p string, max int) (TopoHead, error) {
	b, fi, err := host.ReadHead(r.Path(p), max)
	if err != nil {
		err = openError(p, fi, err)
		if nr := (*NotRegularError)(nil); errors.As(err, &nr) {
			return TopoHead{}, err
		}
		return TopoHead{}, errors.Unwrap(err)
	}
	h := TopoHead{Size: fi.Size(), Checked: len(b)}
	_, err = parseTopo("", b, h.Partial())
	return h, err
}

// openError is the error for a topology file that could not be opened or
// read: *NotRegularError for one that is not a regular file, else err
// with p in front of what the system said (the rooted path dropped).
func openError(p string, fi fs.FileInfo, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the rooted path: p names the file
	}
	if errors.Is(err, host.ErrNotRegular) && fi != nil {
		return &NotRegularError{Path: p, Kind: fileKind(fi.Mode())}
	}
	return fmt.Errorf("%s: %w", p, err)
}

// parseTopo checks that b is an NCCL topology (XML with a <system> root)
// and counts its <cpu> elements. name starts each error ("" for none).
// partial says b is only the start of the file: elements still open where
// b ends are no error, and b is cut after its last '>' so that no token is
// cut in two.
func parseTopo(name string, b []byte, partial bool) (cpus int, err error) {
	if partial {
		end := bytes.LastIndexByte(b, '>')
		if end < 0 {
			return 0, notTopology("%sno XML tag in its first %s", lead(name), size(int64(len(b))))
		}
		b = b[:end+1]
	}
	d := xml.NewDecoder(bytes.NewReader(b))
	root := ""
	for {
		tok, err := d.Token()
		if err != nil {
			var se *xml.SyntaxError
			switch {
			case root == "" && err == io.EOF:
				return 0, notTopology("%sno XML element in it", lead(name))
			case root == "":
				return 0, notTopology("%s%v", lead(name), err)
			case err == io.EOF, partial && errors.As(err, &se) && se.Msg == "unexpected EOF":
				return cpus, nil
			}
			line, _ := d.InputPos()
			return 0, notTopology("%s: %v", at(name, line), err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
				if root != "system" {
					return 0, notTopology("%sroot element <%s>, want <system>", prefix(name), srunconf.ShowN(root, 64))
				}
			}
			if se.Name.Local == "cpu" {
				cpus++
			}
		}
	}
}

// lead starts an error about a file that is no topology: "name: not an
// NCCL topology (XML with a <system> root): ", or "" for no name (the
// caller says it).
func lead(name string) string {
	if name == "" {
		return ""
	}
	return name + ": not an NCCL topology (XML with a <system> root): "
}

// prefix is "name: ", or "" for no name.
func prefix(name string) string {
	if name == "" {
		return ""
	}
	return name + ": "
}

// at is "name:line", or "line N" for no name.
func at(name string, line int) string {
	if name == "" {
		return fmt.Sprintf("line %d", line)
	}
	return fmt.Sprintf("%s:%d", name, line)
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
