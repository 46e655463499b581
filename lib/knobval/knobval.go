// Package knobval holds the values every layer passes around about knobs:
// a knob's ID (name and scope) and its value in canonical string form. It is
// a leaf: it imports only the standard library and lib/cpuset, so the pure planner
// (lib/plan), the journal and drift records use it without pulling in the
// kernel readers, NVML or the configuration.
package knobval

import (
	"errors"
	"strings"
)

// Value is a knob's value in canonical string form ("performance",
// "madvise", "10", "on", "0-3=powersave;4-7=performance").
type Value string

// Unknown is the Value of a knob that can be set but not read back: a GPU's
// locked clocks (NVML has no getter for them). Writing Unknown puts the knob
// to its driver default (it unlocks the clocks), so a baseline recorded as
// Unknown restores by resetting. A planner cannot compare Unknown with a
// desired value: it applies a profile's setting every time, and an epilog
// cannot tell drift on such a knob.
const Unknown Value = "unknown"

// ID names one knob in one scope.
type ID struct {
	Name  string `json:"knob"`  // the config key: "cpu_governor", "gpu_persistence", ...
	Scope string `json:"scope"` // "node", or "gpu:<uuid>" for a GPU's knob
}

func (id ID) String() string { return id.Name + "@" + id.Scope }

// NodeScope is the scope of node-wide knobs (CPU, memory, kernel).
const NodeScope = "node"

// gpuPrefix starts the scope of a GPU's knobs: "gpu:<uuid>".
const gpuPrefix = "gpu:"

// GPUScope is the scope of one GPU's knobs.
func GPUScope(uuid string) string { return gpuPrefix + uuid }

// ScopeGPU is the GPU a scope names: its UUID, and ok false for the node
// (or any scope that names no GPU).
func ScopeGPU(scope string) (uuid string, ok bool) {
	uuid, ok = strings.CutPrefix(scope, gpuPrefix)
	return uuid, ok && uuid != ""
}

// GPU is the GPU whose knob id is: its UUID, and ok false for a node knob.
func (id ID) GPU() (uuid string, ok bool) { return ScopeGPU(id.Scope) }

// ErrUnsupported marks a knob whose file or API is absent on this node (no
// cpufreq in a VM, a GPU without settable clocks). It is reported and
// skipped unless the profile marks the knob required.
var ErrUnsupported = errors.New("unsupported on this node")
