package plan

import (
	"encoding/json"
	"fmt"
)

// Warning is something a run says that did not stop it: a value with its
// kind and whether the job's user should be told (srunwrap prints those),
// not a string others pick out by its words. In JSON it is its text, as
// --json and the logs always showed it.
type Warning struct {
	Kind WarningKind
	Text string
	// User says the job's user should see it: it is about what the job
	// asked for and did not get (a knob kept at another job's value, GPU
	// knobs skipped, a MIG layout not made).
	User bool
}

// WarningKind says what a Warning is about.
type WarningKind string

// Kinds of warnings.
const (
	KindConflict   WarningKind = "conflict"    // a job wants another value than other jobs hold
	KindNoBaseline WarningKind = "no_baseline" // a knob let go of has nothing to go back to
	KindKnob       WarningKind = "knob"        // a knob failed or could not be read
	KindGPUs       WarningKind = "gpus"        // the job's GPUs, GPU knobs skipped
	KindMIG        WarningKind = "mig"         // the [mig] layout, its check or request
	KindProfile    WarningKind = "profile"     // the job's profile, its selection or fallback
	KindNode       WarningKind = "node"        // the node: a reboot, the spool, isolation
)

// Warn is a Warning of kind for the log only.
func Warn(kind WarningKind, format string, a ...any) Warning {
	return Warning{Kind: kind, Text: fmt.Sprintf(format, a...)}
}

// Tell is a Warning of kind the job's user is told too.
func Tell(kind WarningKind, format string, a ...any) Warning {
	return Warning{Kind: kind, Text: fmt.Sprintf(format, a...), User: true}
}

func (w Warning) String() string { return w.Text }

// MarshalJSON writes the text.
func (w Warning) MarshalJSON() ([]byte, error) { return json.Marshal(w.Text) }

// UnmarshalJSON reads the text (an Outcome read back, a test).
func (w *Warning) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, &w.Text) }

// Texts are the warnings' texts, in order.
func Texts(ws []Warning) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.Text
	}
	return out
}
