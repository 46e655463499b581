package irq

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/crashpoint"
	"gpuprep/lib/dirfd"
	"gpuprep/lib/host"
)

// ProcIRQ is a node's /proc/irq opened once, reached without following a
// symbolic link: the files of each IRQ are opened relative to it, never
// through a link (openat2 RESOLVE_NO_SYMLINKS, or O_NOFOLLOW at each step
// where the kernel has no openat2), and without walking the path from the
// root again. A large node has thousands of IRQs; each costs a few system
// calls. It implements Files for the paths under /proc/irq.
type ProcIRQ struct {
	root host.Root
	dir  *dirfd.Dir
	// kernel says /proc/irq is the kernel's (procfs), not a fixture's
	// folder of plain files: told once, by statfs.
	kernel bool
	// noOpenat2 is set once openat2 said ENOSYS (Linux before 5.6).
	noOpenat2 atomic.Bool
}

// procIRQDir is /proc/irq as a path below the root.
const procIRQDir = "proc/irq"

// OpenProcIRQ opens r's /proc/irq. A symbolic link on the way is an error
// naming it; a missing /proc/irq one wrapping fs.ErrNotExist.
func OpenProcIRQ(r host.Root) (*ProcIRQ, error) {
	top, err := dirfd.Open(r.Dir())
	if err != nil {
		return nil, err
	}
	defer top.Close()
	d, err := top.Walk(procIRQDir, dirfd.Walk{})
	if err != nil {
		var se *dirfd.SymlinkError
		if errors.As(err, &se) {
			link, _ := r.Rel(se.Path)
			return nil, fmt.Errorf("/proc/irq: %s is a symbolic link; gpuprep reads and writes IRQ files only where no link leads", link)
		}
		return nil, err
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(d.FD(), &sfs); err != nil {
		d.Close()
		return nil, fmt.Errorf("statfs /proc/irq: %w", err)
	}
	return &ProcIRQ{root: r, dir: d, kernel: sfs.Type == unix.PROC_SUPER_MAGIC}, nil
}

// Close closes /proc/irq.
func (p *ProcIRQ) Close() error { return p.dir.Close() }

// rel is node path np ("/proc/irq/24/smp_affinity_list") relative to
// /proc/irq ("24/smp_affinity_list"): two plain names.
func rel(np string) (string, error) {
	r, ok := strings.CutPrefix(np, "/"+procIRQDir+"/")
	dir, name, two := strings.Cut(r, "/")
	if !ok || !two || dir == "" || name == "" || strings.Contains(name, "/") || dir == ".." || name == ".." || dir == "." || name == "." {
		return "", fmt.Errorf("%s: not a file of an IRQ's folder under /proc/irq", np)
	}
	return r, nil
}

// open opens r ("24/smp_affinity_list") below /proc/irq, no link followed.
func (p *ProcIRQ) open(r string, flags int) (int, error) {
	flags |= unix.O_CLOEXEC | unix.O_NOFOLLOW
	if !p.noOpenat2.Load() {
		how := unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS}
		fd, err := unix.Openat2(p.dir.FD(), r, &how)
		if !errors.Is(err, unix.ENOSYS) {
			return fd, err
		}
		p.noOpenat2.Store(true)
	}
	dir, name, _ := strings.Cut(r, "/")
	d, err := p.dir.OpenDir(dir) // lib/dirfd's no-link step
	if err != nil {
		return -1, err
	}
	defer d.Close()
	return unix.Openat(d.FD(), name, flags, 0)
}

// openNode opens the IRQ file at node path np
// ("/proc/irq/24/smp_affinity_list"), no link followed; the error names
// it.
func (p *ProcIRQ) openNode(np string, flags int) (int, error) {
	r, err := rel(np)
	if err != nil {
		return -1, err
	}
	fd, err := p.open(r, flags)
	if err != nil {
		return -1, p.pathErr("open", np, err)
	}
	return fd, nil
}

// pathErr is err of op on node path np, a symbolic link said as such.
func (p *ProcIRQ) pathErr(op, np string, err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) || errors.Is(err, dirfd.ErrSymlink) {
		return fmt.Errorf("%s %s: it or a folder on its way is a symbolic link; gpuprep reads and writes IRQ files only where no link leads", op, np)
	}
	return &fs.PathError{Op: op, Path: p.root.Path(np), Err: err}
}

// maxIRQFile bounds one IRQ file: a CPU list of every CPU Linux numbers.
const maxIRQFile = 64 << 10

// ReadString reads the IRQ file at node path np, trimmed as
// host.Root.ReadString trims.
func (p *ProcIRQ) ReadString(np string) (string, error) {
	fd, err := p.openNode(np, unix.O_RDONLY)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	b, err := readFD(fd)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", np, err)
	}
	return strings.Trim(string(b), " \t\r\n\x00"), nil
}

// readFD reads fd to its end (at most maxIRQFile bytes). An IRQ file is
// one short record, which the kernel gives whole to the first read: a
// read that fills less than the room it was given is the end (one read
// for each file, not two).
func readFD(fd int) ([]byte, error) {
	var small [512]byte
	b, err := readFrom(fd, small[:0], false)
	return slices.Clone(b), err
}

// preadFD is readFD from the file's start, whatever its offset (the read
// back after a write on the same descriptor: one system call, where
// opening the file again takes three).
func preadFD(fd int) ([]byte, error) {
	var small [512]byte
	b, err := readFrom(fd, small[:0], true)
	return slices.Clone(b), err
}

// readInto is readFD into b's room (grown when the file needs more).
func readInto(fd int, b []byte) ([]byte, error) { return readFrom(fd, b, false) }

func readFrom(fd int, b []byte, fromStart bool) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			if cap(b) >= maxIRQFile {
				return nil, fmt.Errorf("larger than %d bytes", maxIRQFile)
			}
			b = slices.Grow(b, cap(b))
		}
		var n int
		var err error
		if fromStart {
			n, err = unix.Pread(fd, b[len(b):cap(b)], int64(len(b)))
		} else {
			n, err = unix.Read(fd, b[len(b):cap(b)])
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		room := cap(b) - len(b)
		b = b[:len(b)+n]
		if n == 0 || n < room {
			return b, nil
		}
	}
}

// WriteFile writes value to the IRQ file at node path np and returns what
// it reads afterwards, as host.Root.WriteFile does: one write(2) to the
// kernel's file. It never creates the file.
//
// A fixture's plain file is written in place, never emptied on the way:
// the value, padded with newlines to the old content's length, in one
// write at its start, then the file cut to the value. A process killed in
// between leaves the value and blank lines, which read as the value;
// never an empty file, which real procfs never shows (host.Root.WriteFile
// replaces a fixture's file by a rename for the same reason, at four
// times the system calls: a large node's restore writes a thousand IRQs).
func (p *ProcIRQ) WriteFile(np, value string) (string, error) {
	fd, err := p.openNode(np, unix.O_RDWR)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	crashpoint.Hit("write", p.root.Path(np))
	if p.kernel {
		err = writeOnce(fd, value)
	} else {
		err = writeInPlace(fd, value)
	}
	if err != nil {
		return "", fmt.Errorf("write %q to %s: %w", value, np, err)
	}
	b, err := preadFD(fd)
	if err != nil {
		return "", fmt.Errorf("read back %s: %w", np, err)
	}
	return strings.Trim(string(b), " \t\r\n\x00"), nil
}

// writeOnce writes value to a kernel attribute in one write.
func writeOnce(fd int, value string) error {
	n, err := unix.Write(fd, []byte(value))
	if err == nil && n != len(value) {
		err = fmt.Errorf("short write (%d of %d bytes)", n, len(value))
	}
	return err
}

// writeInPlace writes value over a fixture's plain file open as fd (see
// WriteFile); a file that is not a regular one is an error.
func writeInPlace(fd int, value string) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return errors.New("not a regular file")
	}
	b := []byte(value)
	for int64(len(b)) < st.Size {
		b = append(b, '\n')
	}
	n, err := unix.Pwrite(fd, b, 0)
	if err == nil && n != len(b) {
		err = fmt.Errorf("short write (%d of %d bytes)", n, len(b))
	}
	if err == nil && len(b) > len(value) {
		err = unix.Ftruncate(fd, int64(len(value)))
	}
	return err
}

// Mode is the permission bits of the IRQ file at node path np, a link in
// its place refused (the write that follows refuses one on the way); a
// file that is not a regular one is an error. One fstatat.
func (p *ProcIRQ) Mode(np string) (uint32, error) {
	r, err := rel(np)
	if err != nil {
		return 0, err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(p.dir.FD(), r, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return 0, p.pathErr("stat", np, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFLNK:
		return 0, p.pathErr("open", np, unix.ELOOP)
	default:
		return 0, fmt.Errorf("write %s: not a regular file", np)
	}
	return st.Mode, nil
}

// ReadAffinities reads smp_affinity_list and its permissions for each IRQ
// given (ReadAffinity without effective_affinity_list, which the
// placement does not use), several at a time. IRQs freed meanwhile are
// left out and listed in gone; the others keep their order.
func (p *ProcIRQ) ReadAffinities(irqs []int) (affs []Affinity, gone []int, err error) {
	return p.readEach(irqs, true)
}

// ReadCPUs is ReadAffinities without the permissions (ReadOnly false): a
// placement's check reads the CPUs alone.
func (p *ProcIRQ) ReadCPUs(irqs []int) (affs []Affinity, gone []int, err error) {
	return p.readEach(irqs, false)
}

func (p *ProcIRQ) readEach(irqs []int, mode bool) (affs []Affinity, gone []int, err error) {
	all := make([]Affinity, len(irqs))
	errs := make([]error, len(irqs))
	sets := &cpuLists{m: map[string]cpuset.Set{}}
	parallel(len(irqs), func(i int) {
		all[i], errs[i] = p.readAffinity(irqs[i], mode, sets)
	})
	for i, a := range all {
		switch {
		case errors.Is(errs[i], fs.ErrNotExist):
			gone = append(gone, irqs[i])
		case errs[i] != nil:
			return nil, nil, errs[i]
		default:
			affs = append(affs, a)
		}
	}
	return affs, gone, nil
}

// cpuLists are the CPU lists read so far, parsed: a node's IRQs hold a
// few lists between them.
type cpuLists struct {
	mu sync.Mutex
	m  map[string]cpuset.Set
}

// parse is ParseCPUList of b, read from the file at node path np.
func (c *cpuLists) parse(np func() string, b []byte) (cpuset.Set, error) {
	b = bytes.Trim(b, " \t\r\n\x00")
	c.mu.Lock()
	set, ok := c.m[string(b)]
	c.mu.Unlock()
	if ok {
		return set, nil
	}
	set, err := ParseCPUList(np(), string(b))
	if err == nil {
		c.mu.Lock()
		c.m[string(b)] = set
		c.mu.Unlock()
	}
	return set, err
}

// readAffinity reads one IRQ's smp_affinity_list, and with mode its
// permissions.
func (p *ProcIRQ) readAffinity(n int, mode bool, sets *cpuLists) (Affinity, error) {
	a := Affinity{IRQ: n}
	np := func() string { return AffinityPath(n) }
	var name [32]byte
	fd, err := p.open(string(append(strconv.AppendInt(name[:0], int64(n), 10), "/smp_affinity_list"...)), unix.O_RDONLY)
	if err != nil {
		return a, p.pathErr("open", np(), err)
	}
	defer unix.Close(fd)
	if mode {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return a, p.pathErr("stat", np(), err)
		}
		a.ReadOnly = st.Mode&0o222 == 0
	}
	var buf [512]byte
	b, err := readInto(fd, buf[:0])
	if err != nil {
		return a, fmt.Errorf("read %s: %w", np(), err)
	}
	a.CPUs, err = sets.parse(np, b)
	return a, err
}

// parallel calls f(0) ... f(n-1), spread over as many goroutines as the
// process may run at once (at most 8): reading a file is a few system
// calls, which the CPUs make side by side.
func parallel(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), 8, n)
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
}

// ensure ProcIRQ is Files.
var _ Files = (*ProcIRQ)(nil)
