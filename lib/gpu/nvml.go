package gpu

import (
	"errors"
	"fmt"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"gpuprep/lib/host"
)

// ErrNoNVML is returned by OpenNVML when libnvidia-ml.so.1 cannot be loaded.
var ErrNoNVML = errors.New("nvml: libnvidia-ml.so.1 not found (is the NVIDIA driver installed?)")

// NVML is the backend over an nvml.Interface: the real library (OpenNVML,
// go-nvml's nvml.New()) or a go-nvml mock server (OpenMock). Kernel files it
// needs besides NVML (CPU count, PCI numa_node fallback, mig-minors) are read
// through root.
type NVML struct {
	lib  nvml.Interface
	root host.Root
	name string
	real bool // lib is libnvidia-ml, not a mock

	// ncpu is how many CPU ids NVML's affinity masks must cover; 0 means
	// "read /sys/devices/system/cpu/possible under root".
	ncpu int
	// fallbackMinors, when set, stands in for the root's mig-minors when
	// the root has none (a mock on the host's "/").
	fallbackMinors func() MIGMinors
	// skipLinks leaves NVLinks out of Devices (see WithoutNVLinks).
	skipLinks bool

	closeOnce sync.Once
}

var _ Backend = (*NVML)(nil)

// OpenNVML loads libnvidia-ml.so.1 and initialises NVML (nvmlInit). A node
// without the library gets ErrNoNVML.
func OpenNVML(root host.Root) (*NVML, error) {
	b, err := newNVML(nvml.New(), root, "nvml")
	if err != nil {
		return nil, err
	}
	b.real = true
	return b, nil
}

// NewNVML initialises NVML through lib (a go-nvml mock server, say) and
// returns the backend over it, named name.
func NewNVML(lib nvml.Interface, root host.Root, name string) (*NVML, error) {
	return newNVML(lib, root, name)
}

func newNVML(lib nvml.Interface, root host.Root, name string) (*NVML, error) {
	switch ret := lib.Init(); ret {
	case nvml.SUCCESS:
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return nil, ErrNoNVML
	default:
		return nil, fmt.Errorf("nvml: init: %w", nvmlError(ret))
	}
	return &NVML{lib: lib, root: root, name: name}, nil
}

// Name is "nvml", or "mock:<model>" for a mock server.
func (b *NVML) Name() string { return b.name }

// Interface is the nvml.Interface under the backend; for a mock it is the
// *server.Server, whose devices' funcs a test may replace (to inject ECC
// errors, say).
func (b *NVML) Interface() nvml.Interface { return b.lib }

// Close shuts NVML down (nvmlShutdown). Later calls do nothing.
func (b *NVML) Close() error {
	var err error
	b.closeOnce.Do(func() {
		if ret := b.lib.Shutdown(); ret != nvml.SUCCESS {
			err = fmt.Errorf("nvml: shutdown: %w", nvmlError(ret))
		}
	})
	return err
}

// handle is nvmlDeviceGetHandleByIndex.
func (b *NVML) handle(index int) (nvml.Device, error) {
	h, ret := b.lib.DeviceGetHandleByIndex(index)
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("nvml: GPU %d: %w", index, nvmlError(ret))
	}
	return h, nil
}

// gpuError names the GPU (index and bus id) and the failed operation around
// NVML's error. The bus id costs one more NVML call, on the error path only.
func gpuError(h nvml.Device, index int, what string, ret nvml.Return) error {
	bus := "bus id unknown"
	if p, r := h.GetPciInfo(); r == nvml.SUCCESS {
		bus = busIDOf(p)
	}
	return fmt.Errorf("nvml: GPU %d (%s): %s: %w", index, bus, what, nvmlError(ret))
}

// nvmlErr is an NVML return code as an error: its message is NVML's error
// string, it unwraps to the nvml.Return, and NOT_SUPPORTED matches
// ErrUnsupported.
type nvmlErr struct{ ret nvml.Return }

func nvmlError(ret nvml.Return) error { return nvmlErr{ret} }

func (e nvmlErr) Error() string { return e.ret.Error() }
func (e nvmlErr) Unwrap() error { return e.ret }
func (e nvmlErr) Is(target error) bool {
	return target == ErrUnsupported && e.ret == nvml.ERROR_NOT_SUPPORTED
}

// WithoutNVLinks makes b's Devices leave NVLinks nil when b queries them one
// link at a time (nvml, mock): the prolog and epilog, which run before and
// after every job, need the GPUs but not their links (18 per GPU on an HGX
// board, two NVML calls each). Other backends are left as they are.
func WithoutNVLinks(b Backend) {
	if n, ok := b.(*NVML); ok {
		n.skipLinks = true
	}
}
