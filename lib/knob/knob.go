// Package knob is every setting gpuprep tunes: each knob can say whether it
// exists on this node, read its value, turn a profile setting into the value
// to apply, apply it and verify by reading it back. Values are canonical
// strings, so plans, journals and drift records carry them as they are, and
// Apply(Read()) puts back exactly what was there.
//
// Every knob is registered in one place, its own file, as a Def (see
// registry.go): its configuration key, scope, order, the files it writes,
// how its TOML value is checked and turned into a setting, and how to build
// it. The configuration, Catalog and the tests derive their lists from the
// registry.
package knob

import (
	"errors"
	"fmt"

	"gpuprep/lib/knobval"
)

// Aliases of the leaf package's names, so that knob's users need one import.
type (
	// Value is a knob's value in canonical string form; see knobval.Value.
	Value = knobval.Value
	// ID names one knob in one scope; see knobval.ID.
	ID = knobval.ID
)

// ErrUnsupported marks a knob absent on this node; see knobval.ErrUnsupported.
var ErrUnsupported = knobval.ErrUnsupported

// NodeScope is the scope of node-wide knobs (CPU, memory, kernel).
const NodeScope = knobval.NodeScope

// GPUScope is the scope of one GPU's knobs.
func GPUScope(uuid string) string { return knobval.GPUScope(uuid) }

// Knob is one tunable setting in one scope.
type Knob interface {
	ID() ID
	// Read returns the current value, or an error wrapping
	// ErrUnsupported when the knob does not exist here.
	Read() (Value, error)
	// Desired turns a profile setting (the config value in canonical
	// string form, as the knob's Def.Decode gives it) into the value Apply
	// should write. Most knobs take it as it is; cstate_max_latency_us
	// turns a latency limit into the set of idle states to disable.
	Desired(setting string) (Value, error)
	// Apply writes v and reads it back; an error when the read-back value
	// differs names what was written and what was read.
	Apply(v Value) error
}

// MismatchError is Apply's error when the kernel or driver kept another
// value than the one written.
type MismatchError struct {
	ID         ID
	Want, Have Value
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("%s: wrote %q, read back %q", e.ID, e.Want, e.Have)
}

// ErrLeaveAlone is wrapped by Desired's error for a setting that means
// "do not manage this knob" (cstate_max_latency_us = -1). Callers skip the
// knob: it is neither applied nor journaled.
var ErrLeaveAlone = errors.New("leave alone")

// Unknown is the Value of a knob that can be set but not read back; see
// knobval.Unknown.
const Unknown = knobval.Unknown
