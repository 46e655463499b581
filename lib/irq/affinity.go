package irq

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/host"
)

// Dir is the procfs folder of one IRQ: /proc/irq/<n>. The kernel makes it
// when a driver first requests the IRQ.
func Dir(irq int) string { return "/proc/irq/" + strconv.Itoa(irq) }

// AffinityPath is /proc/irq/<n>/smp_affinity_list: the CPUs the IRQ may be
// delivered to, as a CPU list. Writing it moves the IRQ.
func AffinityPath(irq int) string { return Dir(irq) + "/smp_affinity_list" }

// EffectivePath is /proc/irq/<n>/effective_affinity_list: the CPUs the
// interrupt chip actually targets, within the affinity (one CPU on x86).
// Kernels before 4.15 and chips without effective affinity have none.
func EffectivePath(irq int) string { return Dir(irq) + "/effective_affinity_list" }

// Affinity is where the kernel may and does deliver one IRQ.
type Affinity struct {
	IRQ int
	// CPUs is smp_affinity_list.
	CPUs cpuset.Set
	// Effective is effective_affinity_list; empty when the IRQ is not
	// active or the kernel has no such file (HasEffective false).
	Effective    cpuset.Set
	HasEffective bool
	// ReadOnly says smp_affinity_list has no write permission: from
	// Linux 6.12 on, the kernel shows managed and per-CPU IRQs so, and
	// refuses a new affinity for them. Older kernels show every IRQ
	// writable; their refusal shows only at the write (Apply).
	ReadOnly bool
}

// Exists says whether /proc/irq/<n>/ exists: whether a driver requested
// the IRQ. An error other than "does not exist" is returned as such.
func Exists(r host.Root, irq int) (bool, error) {
	return r.ExistsErr(Dir(irq))
}

// ReadAffinity reads /proc/irq/<n>/smp_affinity_list, its permissions and
// effective_affinity_list. An IRQ that is gone (freed since it was
// listed) is an error wrapping fs.ErrNotExist; a missing
// effective_affinity_list is not an error.
func ReadAffinity(r host.Root, irq int) (Affinity, error) {
	a := Affinity{IRQ: irq}
	p := AffinityPath(irq)
	s, err := r.ReadString(p)
	if err != nil {
		return a, err
	}
	if a.CPUs, err = ParseCPUList(p, s); err != nil {
		return a, err
	}
	fi, err := os.Stat(r.Path(p))
	if err != nil {
		return a, err
	}
	a.ReadOnly = fi.Mode().Perm()&0o222 == 0
	p = EffectivePath(irq)
	switch s, err := r.ReadString(p); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return a, err
	default:
		if a.Effective, err = ParseCPUList(p, s); err != nil {
			return a, err
		}
		a.HasEffective = true
	}
	return a, nil
}

// ReadAffinities reads the affinity of each IRQ given (the numbered rows
// of /proc/interrupts). IRQs freed meanwhile are left out and listed in
// gone.
func ReadAffinities(r host.Root, irqs []int) (affs []Affinity, gone []int, err error) {
	for _, n := range irqs {
		a, err := ReadAffinity(r, n)
		if errors.Is(err, fs.ErrNotExist) {
			gone = append(gone, n)
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		affs = append(affs, a)
	}
	return affs, gone, nil
}

// ParseCPUList parses the one-line CPU list of a kernel file ("0-3,8",
// "" for none); path names the file in the error.
func ParseCPUList(path, s string) (cpuset.Set, error) {
	s = strings.Trim(s, " \t\r\n\x00")
	if strings.ContainsAny(s, "\n") {
		return cpuset.Set{}, fmt.Errorf("%s: more than one line (want a CPU list such as 0-3,8)", path)
	}
	set, err := cpuset.Parse(s)
	if err != nil {
		return cpuset.Set{}, fmt.Errorf("%s: %w", path, err)
	}
	return set, nil
}
