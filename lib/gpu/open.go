package gpu

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"gpuprep/lib/host"
)

// Opener opens a registered backend over a root; arg is what followed the
// name's colon in the spec ("dgxh100" in "mock:dgxh100"), "" otherwise.
type Opener func(arg string, root host.Root) (Backend, error)

var (
	registryMu sync.Mutex
	registry   = map[string]registered{}
)

type registered struct {
	open Opener
	args []string // accepted args, for Specs and errors; nil: none
}

// Register makes Open accept name (or name:<arg> for each of args). The
// NVML backend (lib/gpu/nvmlgpu) and the mock servers (internal/gpumock)
// register themselves from init, so a program has the backends whose
// packages it imports: production binaries import nvmlgpu and never the
// mocks (only a build with -tags gpuprep_mock does, for demos and tests).
func Register(name string, args []string, open Opener) {
	registryMu.Lock()
	defer registryMu.Unlock()
	registry[name] = registered{open: open, args: args}
}

func lookup(name string) (registered, bool) {
	registryMu.Lock()
	defer registryMu.Unlock()
	r, ok := registry[name]
	return r, ok
}

// Specs lists every value Open accepts in this program.
func Specs() []string {
	s := []string{"auto", "procfs", "none"}
	registryMu.Lock()
	defer registryMu.Unlock()
	for _, name := range slices.Sorted(maps.Keys(registry)) {
		r := registry[name]
		if len(r.args) == 0 {
			s = append(s, name)
		}
		for _, a := range r.args {
			s = append(s, name+":"+a)
		}
	}
	return s
}

// Open returns the backend named by spec (the --gpu-backend flag):
//
//   - nvml: libnvidia-ml through go-nvml (lib/gpu/nvmlgpu, when linked in).
//   - procfs: /proc/driver/nvidia under root; read-only.
//   - none: no GPUs.
//   - mock:<model>: go-nvml's mock server for model (internal/gpumock, in
//     builds with -tags gpuprep_mock and in tests).
//   - auto: nvml when root is the host's "/" and NVML loads and
//     initialises; else procfs when root has /proc/driver/nvidia/gpus; else
//     none (a Fallback, which says why). NVML only ever describes the
//     machine it runs on, so a fixture root never gets it. Name() tells
//     which was chosen.
func Open(spec string, root host.Root) (Backend, error) {
	switch spec {
	case "auto", "":
		return openAuto(root)
	case "procfs":
		return OpenProcfs(root), nil
	case "none":
		return None{}, nil
	}
	name, arg, _ := strings.Cut(spec, ":")
	r, ok := lookup(name)
	switch {
	case ok && (arg == "") == (len(r.args) == 0):
		return r.open(arg, root)
	case name == "mock" && !ok:
		return nil, fmt.Errorf("gpu: backend %q: this build has no mock backends (they are for tests: build with -tags gpuprep_mock)", spec)
	}
	return nil, fmt.Errorf("gpu: unknown backend %q (want one of %s)", spec, strings.Join(Specs(), ", "))
}

func openAuto(root host.Root) (Backend, error) {
	var why []string
	// nvmlWhy is why NVML is not the backend, for AutoReason.
	var nvmlWhy string
	switch r, ok := lookup("nvml"); {
	case !root.IsHost():
		nvmlWhy = "auto never uses NVML with --root " + root.Dir() + " (NVML sees this machine's GPUs, not the root's)"
	case !ok:
		nvmlWhy = "this build has no NVML backend"
	default:
		// Any NVML failure (no library, driver not loaded) falls through:
		// procfs may still list the GPUs.
		b, err := r.open("", root)
		if err == nil {
			return b, nil
		}
		nvmlWhy = "NVML: " + strings.TrimPrefix(err.Error(), "nvml: ")
		why = append(why, nvmlWhy)
	}
	if root.Exists(procGPUs) {
		p := OpenProcfs(root)
		p.autoWhy = nvmlWhy
		return p, nil
	}
	if root.Exists(procDriver) {
		why = append(why, procGPUs+" missing")
	} else {
		why = append(why, procDriver+" missing: driver not loaded?")
	}
	return Fallback{Why: strings.Join(why, "; ")}, nil
}

// procDriver is the NVIDIA driver's procfs folder: there while the nvidia
// module is loaded.
const procDriver = "/proc/driver/nvidia"

// Fallback is the none backend that --gpu-backend auto chose because no
// backend answered: like None it is named "none" and lists no GPU, so a
// node without GPUs runs as before; Why says what auto tried ("NVML:
// libnvidia-ml.so.1 not found ...; /proc/driver/nvidia missing: driver not
// loaded?"). An admin's explicit none is None, never Fallback: only a
// fallback may be a node whose GPUs the driver lost (AutoFallback).
type Fallback struct {
	None
	Why string
}

// AutoReason says why --gpu-backend auto did not choose NVML for b: NVML's
// own error when it fell back to procfs or none ("NVML: libnvidia-ml.so.1
// not found ..."), with what else it tried for none. ok is false for a
// backend that was asked for by name, and for NVML itself.
func AutoReason(b Backend) (why string, ok bool) {
	switch b := b.(type) {
	case Fallback:
		return b.Why, true
	case *Procfs:
		return b.autoWhy, b.autoWhy != ""
	}
	return "", false
}

// AutoFallback says whether b is the none backend --gpu-backend auto fell
// back to, and why; false for every other backend, an explicit none
// included.
func AutoFallback(b Backend) (why string, ok bool) {
	f, ok := b.(Fallback)
	return f.Why, ok
}
