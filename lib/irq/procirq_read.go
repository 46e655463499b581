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
)

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

// ReadIfPresent is ReadString for a file an IRQ may lack
// (effective_affinity_list: kernels before 4.15, some chips): a missing
// one is ok false, without an error to make and drop.
func (p *ProcIRQ) ReadIfPresent(np string) (s string, ok bool, err error) {
	r, err := rel(np)
	if err != nil {
		return "", false, err
	}
	fd, err := p.open(r, unix.O_RDONLY)
	if errors.Is(err, unix.ENOENT) {
		return "", false, nil
	}
	if err != nil {
		return "", false, p.pathErr("open", np, err)
	}
	defer unix.Close(fd)
	var buf [512]byte
	b, err := readInto(fd, buf[:0])
	if err != nil {
		return "", false, fmt.Errorf("read %s: %w", np, err)
	}
	return strings.Trim(string(b), " \t\r\n\x00"), true, nil
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
