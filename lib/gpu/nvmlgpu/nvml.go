// Package nvmlgpu is the GPU backend over NVML (go-nvml): the full picture of
// a node's GPUs (NVLinks, MIG profile names), their settings and health, and
// the setters. It registers itself with lib/gpu as "nvml"; a program that
// imports it can open it with --gpu-backend nvml (or auto).
//
// NVML is costly per call on a big node (measured on the 2x H200 node: init
// 10.5 ms, a device handle 6.7 ms each, an application-clock read 6 ms per
// GPU), so the backend opens a GPU's handle only when that GPU is used
// (safe from parallel goroutines, so callers open several at once), and
// reads only the settings fields a caller names. With Light, even the
// inventory comes from the driver's procfs files instead of NVML.
package nvmlgpu

import (
	"errors"
	"fmt"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
)

func init() {
	gpu.Register("nvml", nil, func(_ string, root host.Root) (gpu.Backend, error) { return Open(root) })
}

// ErrNoNVML is returned by Open when libnvidia-ml.so.1 cannot be loaded.
var ErrNoNVML = errors.New("nvml: libnvidia-ml.so.1 not found (is the NVIDIA driver installed?)")

// NVML is the backend over an nvml.Interface: the real library (Open) or a
// go-nvml mock server (New, from internal/gpumock). Kernel files it reads
// besides NVML (the driver's GPU list for Light, mig-minors) are read
// through root.
type NVML struct {
	lib  nvml.Interface
	root host.Root
	opt  Options

	// light: list GPUs from the driver's procfs and skip NVLinks.
	light bool

	mu      sync.Mutex
	devs    []gpu.Device        // the inventory, once listed
	handles map[int]nvml.Device // open handles by gpu.Device.Index

	closeOnce sync.Once
}

// Options complete a backend over a go-nvml mock server.
type Options struct {
	// Name is what Name returns ("nvml" when empty).
	Name string
	// Real says lib is libnvidia-ml, which names MIG profiles itself.
	Real bool
	// FallbackMIGMinors, when set, stands in for root's mig-minors when
	// root has none (a mock on the host's "/").
	FallbackMIGMinors func() gpu.MIGMinors
}

var (
	_ gpu.Backend        = (*NVML)(nil)
	_ gpu.SettingsReader = (*NVML)(nil)
	_ gpu.Setter         = (*NVML)(nil)
	_ gpu.HealthReader   = (*NVML)(nil)
	_ gpu.MIGReader      = (*NVML)(nil)
)

// Open loads libnvidia-ml.so.1 and initialises NVML (nvmlInit). A node
// without the library gets ErrNoNVML.
func Open(root host.Root) (*NVML, error) {
	return New(nvml.New(), root, Options{Name: "nvml", Real: true})
}

// New initialises NVML through lib (a go-nvml mock server, say) and returns
// the backend over it.
func New(lib nvml.Interface, root host.Root, opt Options) (*NVML, error) {
	switch ret := lib.Init(); ret {
	case nvml.SUCCESS:
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return nil, ErrNoNVML
	default:
		return nil, fmt.Errorf("nvml: init: %w", nvmlError(ret))
	}
	if opt.Name == "" {
		opt.Name = "nvml"
	}
	return &NVML{lib: lib, root: root, opt: opt, handles: map[int]nvml.Device{}}, nil
}

// Name is "nvml", or "mock:<model>" for a mock server.
func (b *NVML) Name() string { return b.opt.Name }

// Interface is the nvml.Interface under the backend; for a mock it is the
// *server.Server, whose devices' funcs a test may replace (to inject ECC
// errors, say).
func (b *NVML) Interface() nvml.Interface { return b.lib }

// Light makes the backend list GPUs from the driver's procfs files
// (/proc/driver/nvidia/gpus, as the procfs backend does) when root has them,
// with no NVML call and no NVLinks, and open NVML handles (by PCI bus id)
// only for the GPUs a caller then reads or sets. The prolog and epilog use
// it: they run before and after every job and touch only the job's GPUs.
func (b *NVML) Light() { b.light = true }

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

// gpuError names the GPU (index and bus id) and the failed operation around
// NVML's error. The bus id costs one more NVML call, on the error path only.
func gpuError(h nvml.Device, index int, what string, ret nvml.Return) error {
	return fmt.Errorf("nvml: GPU %d (%s): %s: %w", index, busOf(h), what, nvmlError(ret))
}

// busOf is the GPU's PCI bus id (nvmlDeviceGetPciInfo), or "bus id
// unknown".
func busOf(h nvml.Device) string {
	if p, r := h.GetPciInfo(); r == nvml.SUCCESS {
		return busIDOf(p)
	}
	return "bus id unknown"
}

// nvmlErr is an NVML return code as an error: its message is NVML's error
// string, it unwraps to the nvml.Return, NOT_SUPPORTED matches
// gpu.ErrUnsupported and RESET_REQUIRED gpu.ErrResetRequired.
type nvmlErr struct{ ret nvml.Return }

func nvmlError(ret nvml.Return) error { return nvmlErr{ret} }

func (e nvmlErr) Error() string { return e.ret.Error() }
func (e nvmlErr) Unwrap() error { return e.ret }
func (e nvmlErr) Is(target error) bool {
	return (target == gpu.ErrUnsupported && e.ret == nvml.ERROR_NOT_SUPPORTED) ||
		(target == gpu.ErrResetRequired && e.ret == nvml.ERROR_RESET_REQUIRED)
}
