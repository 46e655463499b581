package bind

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// get_mempolicy(2) flags and the default policy, linux/mempolicy.h.
const (
	mpolDefault = 0
	mpolFNode   = 1 << 0
	mpolFAddr   = 1 << 1
)

// BindThreadMemory makes the pages the calling thread allocates from now
// come from NUMA node (set_mempolicy MPOL_BIND), until restore puts the
// default policy back. The caller keeps its goroutine on its thread
// (runtime.LockOSThread) until it has called restore.
func BindThreadMemory(node int) (restore func(), err error) {
	if node < 0 {
		return nil, fmt.Errorf("NUMA node %d", node)
	}
	if err := setMempolicy(mpolBind, []int{node}); err != nil {
		return nil, fmt.Errorf("set_mempolicy MPOL_BIND node %d: %w", node, err)
	}
	return func() { unix.Syscall(unix.SYS_SET_MEMPOLICY, mpolDefault, 0, 0) }, nil
}

// PageNode is the NUMA node of the page at addr, which must be mapped
// (get_mempolicy with MPOL_F_NODE|MPOL_F_ADDR).
func PageNode(addr uintptr) (int, error) {
	var node int32
	_, _, errno := unix.Syscall6(unix.SYS_GET_MEMPOLICY, uintptr(unsafe.Pointer(&node)), 0, 0, addr, mpolFNode|mpolFAddr, 0)
	if errno != 0 {
		return -1, fmt.Errorf("get_mempolicy of %#x: %w", addr, errno)
	}
	return int(node), nil
}
