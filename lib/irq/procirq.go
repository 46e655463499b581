package irq

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"gpuprep/lib/dirfd"
	"gpuprep/lib/host"
)

// ProcIRQ is a node's /proc/irq opened once (procirq_read.go reads IRQ
// files, procirq_write.go writes them), reached without following a
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

// ensure ProcIRQ is Files.
var _ Files = (*ProcIRQ)(nil)
