package bind

import (
	"errors"
	"fmt"
	"unsafe"

	"gpuprep/lib/srunconf"

	"golang.org/x/sys/unix"

	"gpuprep/lib/cpuset"
)

// Applied is what Apply put in force on the calling thread.
type Applied struct {
	CPUs      cpuset.Set `json:"cpus"`       // the affinity set; empty when left as it was
	MemPolicy string     `json:"mem_policy"` // srunconf.MemBind, srunconf.MemPreferred or srunconf.MemOff (left as it was)
	MemNodes  []int      `json:"mem_nodes"`
}

// Memory policy modes of set_mempolicy(2), linux/mempolicy.h.
const (
	mpolPreferred = 1
	mpolBind      = 2
)

// setMempolicy is set_mempolicy(2) for the calling thread; a variable so
// that tests can play a kernel or seccomp filter that refuses it.
var setMempolicy = func(mode int, nodes []int) error {
	mask := nodeMask(nodes)
	// maxnode counts one more bit than the mask holds: the kernel reads
	// maxnode-1 bits (as libnuma passes it).
	_, _, errno := unix.Syscall(unix.SYS_SET_MEMPOLICY, uintptr(mode),
		uintptr(unsafe.Pointer(&mask[0])), uintptr(len(mask)*64+1))
	if errno != 0 {
		return errno
	}
	return nil
}

// setAffinity is sched_setaffinity(2) for the calling thread.
var setAffinity = func(cpus cpuset.Set) error {
	var set unix.CPUSet
	for _, c := range cpus.List() {
		if c >= len(set)*64 {
			return fmt.Errorf("CPU %d is beyond the %d CPUs sched_setaffinity takes here", c, len(set)*64)
		}
		set.Set(c)
	}
	return unix.SchedSetaffinity(0, &set)
}

func nodeMask(nodes []int) []uint64 {
	hi := 0
	for _, n := range nodes {
		hi = max(hi, n)
	}
	mask := make([]uint64, hi/64+1)
	for _, n := range nodes {
		mask[n/64] |= 1 << (n % 64)
	}
	return mask
}

// Apply puts p's CPU affinity (sched_setaffinity) and memory policy
// (set_mempolicy) in force on the calling OS thread. Both are per thread
// in Linux and survive execve: the caller must call runtime.LockOSThread
// before Apply and exec (syscall.Exec, unix.Exec) from the same goroutine
// without unlocking, or the command starts with another thread's settings.
//
// A refused set_mempolicy (EPERM from a container's seccomp filter,
// ENOSYS, EINVAL) falls back from MPOL_BIND to MPOL_PREFERRED on the first
// of p.MemNodes, then to leaving the policy as it is; each fallback is a
// Warning{Check: "memory_policy"} naming what was refused and what is in
// force. A refused affinity is the error (wrapped errno); the memory
// policy is still applied. Applied says what is in force.
func Apply(p Plan) (applied Applied, warnings []Warning, err error) {
	applied.MemPolicy = srunconf.MemOff
	if !p.CPUs.IsEmpty() {
		if e := setAffinity(p.CPUs); e != nil {
			err = fmt.Errorf("sched_setaffinity(CPUs %s): %w", p.CPUs, e)
		} else {
			applied.CPUs = p.CPUs
		}
	}
	if len(p.MemNodes) == 0 || p.MemPolicy == srunconf.MemOff || p.MemPolicy == "" {
		return applied, nil, err
	}
	for _, n := range p.MemNodes {
		if n < 0 || n >= 1<<16 {
			return applied, []Warning{{"memory_policy", fmt.Sprintf("NUMA node %d is not a node id: memory policy left as it is", n)}}, err
		}
	}
	nodes := p.MemNodes
	mode := p.MemPolicy
	for {
		var e error
		switch mode {
		case srunconf.MemBind:
			e = setMempolicy(mpolBind, nodes)
		case srunconf.MemPreferred:
			nodes = nodes[:1]
			e = setMempolicy(mpolPreferred, nodes)
		default:
			return applied, append(warnings, Warning{"memory_policy", fmt.Sprintf("unknown memory policy %q: memory policy left as it is", mode)}), err
		}
		if e == nil {
			applied.MemPolicy, applied.MemNodes = mode, nodes
			return applied, warnings, err
		}
		next, nextWords := srunconf.MemPreferred, fmt.Sprintf("MPOL_PREFERRED on NUMA node %d is in force instead", p.MemNodes[0])
		if mode == srunconf.MemPreferred {
			next, nextWords = srunconf.MemOff, "the memory policy is left as it was (the kernel's default: local node first)"
		}
		warnings = append(warnings, Warning{"memory_policy", fmt.Sprintf("set_mempolicy(%s, NUMA %s) refused: %s; %s",
			mpolName(mode), nodeWord(nodes), errnoWords(e), nextWords)})
		if next == srunconf.MemOff {
			return applied, warnings, err
		}
		mode, nodes = next, p.MemNodes
	}
}

func mpolName(mode string) string {
	if mode == srunconf.MemPreferred {
		return "MPOL_PREFERRED"
	}
	return "MPOL_BIND"
}

func errnoWords(e error) string {
	var en unix.Errno
	if !errors.As(e, &en) {
		return e.Error()
	}
	switch en {
	case unix.EPERM:
		return "EPERM (a container's seccomp filter?)"
	case unix.ENOSYS:
		return "ENOSYS (no NUMA support in this kernel, or filtered)"
	case unix.EINVAL:
		return "EINVAL (nodes outside the task's cpuset.mems?)"
	}
	return unix.ErrnoName(en) + " (" + en.Error() + ")"
}
