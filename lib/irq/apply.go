package irq

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/dirfd"
	"gpuprep/lib/host"
)

// Files is the part of host.Root a Setter writes and reads through; tests
// wrap a Root to play a kernel that refuses a write.
type Files interface {
	ReadString(p string) (string, error)
	// WriteFile writes a file that exists and returns what it reads
	// afterwards (host.Root.WriteFile).
	WriteFile(p, value string) (string, error)
}

// Setter moves IRQs on a node.
type Setter struct {
	Root host.Root
	// Proc is the node's /proc/irq opened once (OpenProcIRQ); nil: each
	// write walks from Root.
	Proc *ProcIRQ
	// Files does the writes and reads; nil is Proc, else Root.
	Files Files
	// NoEffective leaves effective_affinity_list unread (a restore
	// checks only what smp_affinity_list reads back).
	NoEffective bool
}

// Result is what one write of smp_affinity_list did.
type Result struct {
	IRQ  int
	Want cpuset.Set
	// Refused says the kernel keeps its own affinity for the IRQ
	// (managed or per-CPU: a read-only smp_affinity_list, or EIO, from
	// Linux 6.12 on EPERM, at the write). Nothing was changed; it is
	// not an error.
	Refused bool
	// Got is smp_affinity_list read back after the write.
	Got cpuset.Set
	// Effective is effective_affinity_list read back; empty where the
	// kernel has none or the IRQ is not active (then not checked).
	Effective cpuset.Set
	// Mismatch says how the read-back differs from Want; "" when it
	// agrees. The write itself succeeded: the caller reports it (drift
	// of a knob), it is not an error here.
	Mismatch string
}

// SetAffinity is Setter{Root: r}.Set.
func SetAffinity(r host.Root, irq int, want cpuset.Set) (Result, error) {
	return Setter{Root: r}.Set(irq, want)
}

// Set writes want to /proc/irq/<irq>/smp_affinity_list and reads back it
// and effective_affinity_list (which must lie within want). It never
// writes through a symbolic link (the kernel's /proc/irq has none; a
// fixture's could lead out of the root). An IRQ that is gone is an error
// wrapping fs.ErrNotExist; an empty want is an error.
func (s Setter) Set(irq int, want cpuset.Set) (Result, error) {
	res := Result{IRQ: irq, Want: want}
	if want.IsEmpty() {
		return res, fmt.Errorf("IRQ %d: empty CPU list (the kernel keeps at least one CPU)", irq)
	}
	p := AffinityPath(irq)
	text := want.String()
	got, err := s.write(p, text)
	if err != nil {
		if errors.Is(err, ErrReadOnly) || refused(err) {
			res.Refused = true
			return res, nil
		}
		return res, err
	}
	// The kernel reads a list back as String writes it: the same text is
	// the same set, with no parse.
	res.Got = want
	if got != text {
		if res.Got, err = ParseCPUList(p, got); err != nil {
			return res, err
		}
	}
	var why []string
	if !res.Got.Equal(want) {
		why = append(why, fmt.Sprintf("%s reads %q after writing %q", p, res.Got.String(), want.String()))
	}
	if s.NoEffective {
		res.Mismatch = strings.Join(why, "; ")
		return res, nil
	}
	e := EffectivePath(irq)
	switch s, ok, err := s.readIfPresent(e); {
	case err != nil:
		return res, err
	case ok:
		if res.Effective, err = ParseCPUList(e, s); err != nil {
			return res, err
		}
		if !res.Effective.IsSubsetOf(want) {
			why = append(why, fmt.Sprintf("%s is %q, outside %q (a move the kernel makes at the next interrupt, or one it did not make)",
				e, res.Effective.String(), want.String()))
		}
	}
	res.Mismatch = strings.Join(why, "; ")
	return res, nil
}

// SetEach is Set for each IRQ of irqs with the CPUs at the same index of
// want, several at a time (a large node moves a thousand IRQs, each a few
// system calls); the results and errors are by index.
func (s Setter) SetEach(irqs []int, want []cpuset.Set) ([]Result, []error) {
	res := make([]Result, len(irqs))
	errs := make([]error, len(irqs))
	parallel(len(irqs), func(i int) {
		res[i], errs[i] = s.Set(irqs[i], want[i])
	})
	return res, errs
}

// readIfPresent reads the IRQ file at node path p, ok false when there is
// none.
func (s Setter) readIfPresent(p string) (string, bool, error) {
	if s.Files == nil && s.Proc != nil {
		return s.Proc.ReadIfPresent(p)
	}
	v, err := s.files().ReadString(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	return v, err == nil, err
}

// files is what Set writes and reads through: Files, else Proc, else Root.
func (s Setter) files() Files {
	switch {
	case s.Files != nil:
		return s.Files
	case s.Proc != nil:
		return s.Proc
	}
	return s.Root
}

// write writes want (a CPU list) to the IRQ file at node path p, no link followed,
// and returns what it reads back; a file nobody may write is left as it
// is, ErrReadOnly. Through Proc, the mode is told on the descriptor
// written; else by a look at the path first.
func (s Setter) write(p, want string) (string, error) {
	if s.Files == nil && s.Proc != nil {
		return s.Proc.WriteWritable(p, want)
	}
	var mode uint32
	var err error
	if s.Proc != nil {
		mode, err = s.Proc.Mode(p)
	} else {
		mode, err = modeNoLinks(s.Root, p)
	}
	if err != nil {
		return "", err
	}
	if mode&0o222 == 0 {
		return "", ErrReadOnly
	}
	return s.files().WriteFile(p, want)
}

// refused says a write error is the kernel's refusal to move the IRQ:
// EIO, EPERM from Linux 6.12 on, returned by the write (an error opening
// the file is no refusal: it is the caller's lack of permission).
func refused(err error) bool {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Op == "open" {
		return false
	}
	return errors.Is(err, syscall.EIO) || errors.Is(err, syscall.EPERM)
}

// modeNoLinks returns the mode of the file at node path p after opening
// every folder on its way below the root without following a symbolic
// link (lib/dirfd's walker), the file not followed either: a write then
// lands inside the root. (procfs has no links there; only someone who can
// write the fixture tree could swap one in after the check.)
func modeNoLinks(r host.Root, p string) (uint32, error) {
	p = path.Clean("/" + p)
	top, err := dirfd.Open(r.Dir())
	if err != nil {
		return 0, err
	}
	defer top.Close()
	dir, name := path.Split(strings.TrimPrefix(p, "/"))
	d, err := top.Walk(strings.TrimSuffix(dir, "/"), dirfd.Walk{})
	var st *unix.Stat_t
	if err == nil {
		st, err = d.Lstat(name)
		d.Close()
	}
	var se *dirfd.SymlinkError
	switch {
	case errors.As(err, &se):
		link, _ := r.Rel(se.Path)
		return 0, fmt.Errorf("write %s: %s is a symbolic link; gpuprep writes IRQ files only where no link leads", p, link)
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return 0, fmt.Errorf("write %s: %s is a symbolic link; gpuprep writes IRQ files only where no link leads", p, p)
	case err == nil && st.Mode&unix.S_IFMT != unix.S_IFREG:
		return 0, fmt.Errorf("write %s: not a regular file", p)
	}
	if err != nil {
		return 0, err
	}
	return st.Mode, nil
}
