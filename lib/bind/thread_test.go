package bind

import (
	"runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// On the test machine's real kernel: a page first touched under
// BindThreadMemory(0) is on node 0, and PageNode says so.
func TestBindThreadMemoryPlacesPages(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	restore, err := BindThreadMemory(0)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := unix.Mmap(-1, 0, 1<<16, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		restore()
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	mem[0] = 1
	restore()
	node, err := PageNode(uintptr(unsafe.Pointer(unsafePtr(mem))))
	if err != nil {
		t.Fatal(err)
	}
	if node != 0 {
		t.Errorf("page on node %d, want 0", node)
	}
	if _, err := BindThreadMemory(-1); err == nil {
		t.Error("BindThreadMemory(-1) did not fail")
	}
}

func unsafePtr(b []byte) *byte { return &b[0] }
