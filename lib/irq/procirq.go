package irq

import (
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
	return &ProcIRQ{root: r, dir: d}, nil
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
	dfd, err := p.openDir(dir)
	if err != nil {
		return -1, err
	}
	defer unix.Close(dfd)
	return unix.Openat(dfd, name, flags, 0)
}

// openDir opens an IRQ's folder, never a link in its place (ELOOP).
func (p *ProcIRQ) openDir(dir string) (int, error) {
	dfd, err := unix.Openat(p.dir.FD(), dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOTDIR) {
		var st unix.Stat_t
		if unix.Fstatat(p.dir.FD(), dir, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			err = unix.ELOOP
		}
	}
	return dfd, err
}

// pathErr is err of op on node path np, a symbolic link said as such.
func (p *ProcIRQ) pathErr(op, np string, err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
		return fmt.Errorf("%s %s: it or a folder on its way is a symbolic link; gpuprep reads and writes IRQ files only where no link leads", op, np)
	}
	return &fs.PathError{Op: op, Path: p.root.Path(np), Err: err}
}

// maxIRQFile bounds one IRQ file: a CPU list of every CPU Linux numbers.
const maxIRQFile = 64 << 10

// ReadString reads the IRQ file at node path np, trimmed as
// host.Root.ReadString trims.
func (p *ProcIRQ) ReadString(np string) (string, error) {
	r, err := rel(np)
	if err != nil {
		return "", err
	}
	fd, err := p.open(r, unix.O_RDONLY)
	if err != nil {
		return "", p.pathErr("open", np, err)
	}
	defer unix.Close(fd)
	b, err := readFD(fd)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", np, err)
	}
	return strings.Trim(string(b), " \t\r\n\x00"), nil
}

// readFD reads fd to its end (at most maxIRQFile bytes): one read for a
// kernel attribute.
func readFD(fd int) ([]byte, error) {
	var small [512]byte
	b := small[:0]
	for {
		if len(b) == cap(b) {
			if cap(b) >= maxIRQFile {
				return nil, fmt.Errorf("larger than %d bytes", maxIRQFile)
			}
			b = slices.Grow(b, cap(b))
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return slices.Clone(b), nil
		}
		b = b[:len(b)+n]
	}
}

// WriteFile writes value to the IRQ file at node path np and returns what
// it reads afterwards, as host.Root.WriteFile does: one write(2) to a
// kernel attribute; a fixture's plain file is replaced atomically (a
// temporary file exchanged with it), so that no reader ever finds it
// empty. It never creates the file.
func (p *ProcIRQ) WriteFile(np, value string) (string, error) {
	r, err := rel(np)
	if err != nil {
		return "", err
	}
	fd, err := p.open(r, unix.O_WRONLY)
	if err != nil {
		return "", p.pathErr("open", np, err)
	}
	crashpoint.Hit("write", p.root.Path(np))
	plain, mode, err := plainFile(fd)
	if err == nil && plain {
		unix.Close(fd)
		err = p.replace(r, value, mode)
	} else if err == nil {
		err = writeOnce(fd, value)
	} else {
		unix.Close(fd)
	}
	if err != nil {
		return "", fmt.Errorf("write %q to %s: %w", value, np, err)
	}
	got, err := p.ReadString(np)
	if err != nil {
		return "", fmt.Errorf("read back %s: %w", np, err)
	}
	return got, nil
}

// plainFile says whether fd is a plain file outside the kernel's file
// systems (a fixture's), and gives its mode.
func plainFile(fd int) (plain bool, mode uint32, err error) {
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(fd, &sfs); err != nil {
		return false, 0, fmt.Errorf("statfs: %w", err)
	}
	if sfs.Type == unix.PROC_SUPER_MAGIC || sfs.Type == unix.SYSFS_MAGIC {
		return false, 0, nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, 0, fmt.Errorf("stat: %w", err)
	}
	return st.Mode&unix.S_IFMT == unix.S_IFREG, st.Mode & 0o7777, nil
}

// writeOnce writes value to a kernel attribute in one write and closes fd.
func writeOnce(fd int, value string) error {
	n, err := unix.Write(fd, []byte(value))
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err == nil && n != len(value) {
		err = fmt.Errorf("short write (%d of %d bytes)", n, len(value))
	}
	return err
}

// tmpSeq tells apart the temporary files of one process.
var tmpSeq atomic.Uint64

// replace puts a file holding value, mode mode, in the place of the fixture
// file r (within its IRQ's folder, opened without following a link).
func (p *ProcIRQ) replace(r, value string, mode uint32) error {
	dir, name, _ := strings.Cut(r, "/")
	dfd, err := p.openDir(dir)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	tmp := "." + name + ".gpuprep-tmp-" + strconv.Itoa(unix.Getpid()) + "-" + strconv.FormatUint(tmpSeq.Add(1), 10)
	tfd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	err = unix.Fchmod(tfd, mode) // the umask may have cut the mode
	if err == nil {
		err = writeOnce(tfd, value)
	} else {
		unix.Close(tfd)
	}
	if err == nil {
		err = unix.Renameat2(dfd, tmp, dfd, name, unix.RENAME_EXCHANGE)
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
			err = unix.Renameat(dfd, tmp, dfd, name)
		}
	}
	unix.Unlinkat(dfd, tmp, 0) // the old file, or the temporary one on an error
	return err
}

// Mode is the permission bits of the IRQ file at node path np, never
// following a link; a file that is not a regular one is an error.
func (p *ProcIRQ) Mode(np string) (uint32, error) {
	r, err := rel(np)
	if err != nil {
		return 0, err
	}
	fd, err := p.open(r, unix.O_PATH)
	if err != nil {
		return 0, p.pathErr("open", np, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, p.pathErr("stat", np, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFLNK: // O_PATH|O_NOFOLLOW opens a last link itself
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
	parallel(len(irqs), func(i int) {
		all[i], errs[i] = p.readAffinity(irqs[i], mode)
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

// readAffinity reads one IRQ's smp_affinity_list, and with mode its
// permissions.
func (p *ProcIRQ) readAffinity(n int, mode bool) (Affinity, error) {
	a := Affinity{IRQ: n}
	np := AffinityPath(n)
	fd, err := p.open(strconv.Itoa(n)+"/smp_affinity_list", unix.O_RDONLY)
	if err != nil {
		return a, p.pathErr("open", np, err)
	}
	defer unix.Close(fd)
	if mode {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return a, p.pathErr("stat", np, err)
		}
		a.ReadOnly = st.Mode&0o222 == 0
	}
	b, err := readFD(fd)
	if err != nil {
		return a, fmt.Errorf("read %s: %w", np, err)
	}
	a.CPUs, err = ParseCPUList(np, string(b))
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
