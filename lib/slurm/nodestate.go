package slurm

import (
	"context"
	"fmt"
	"strings"

	"gpuprep/lib/textfmt"
)

// NodeState is what slurmctld says of one node: its state flags and the
// reason an admin or a program gave for draining it.
type NodeState struct {
	Name string
	// State is scontrol's State= value: "IDLE", "MIXED+DRAIN",
	// "DOWN+DRAIN+NOT_RESPONDING".
	State string
	// Reason is the reason text without scontrol's " [user@time]" suffix;
	// "" when none.
	Reason string
	// ReasonBy is the user in that suffix ("root"), "" when absent.
	ReasonBy string
}

// Drained says whether the node is drained or draining (its state has the
// DRAIN flag).
func (n NodeState) Drained() bool {
	for _, f := range strings.Split(n.State, "+") {
		if f == "DRAIN" || f == "DRAINED" || f == "DRAINING" {
			return true
		}
	}
	return false
}

// Busy says whether jobs run on the node or are finishing: its base state
// is ALLOCATED, MIXED or COMPLETING, or it has the COMPLETING flag.
func (n NodeState) Busy() bool {
	for _, f := range strings.Split(n.State, "+") {
		switch strings.TrimSuffix(f, "*") {
		case "ALLOCATED", "ALLOC", "MIXED", "MIX", "COMPLETING", "COMP":
			return true
		}
	}
	return false
}

// ShowNode reads the node's state: `scontrol show node NODE` (argv, no
// shell), parsed by ParseShowNode.
func ShowNode(ctx context.Context, node string) (NodeState, error) {
	out, err := scontrol(ctx, "show", "node", node)
	if err != nil {
		return NodeState{}, err
	}
	return ParseShowNode(out)
}

// ParseShowNode parses `scontrol show node NODE` output (the multi-line
// form, which every Slurm release since 2.x prints): NodeName= starts it,
// State= is one word among others on its line, and Reason= takes the rest
// of its own line, "text [user@2026-12-02T10:00:00]".
func ParseShowNode(out string) (NodeState, error) {
	var n NodeState
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if r, ok := strings.CutPrefix(line, "Reason="); ok {
			n.Reason, n.ReasonBy = splitReason(r)
			continue
		}
		for _, w := range strings.Fields(line) {
			switch {
			case strings.HasPrefix(w, "NodeName=") && n.Name == "":
				n.Name = strings.TrimPrefix(w, "NodeName=")
			case strings.HasPrefix(w, "State=") && n.State == "":
				n.State = strings.TrimPrefix(w, "State=")
			}
		}
	}
	if n.Name == "" || n.State == "" {
		return NodeState{}, fmt.Errorf("scontrol show node: no NodeName= or State= in its output %q", textfmt.Clip(out, 40))
	}
	return n, nil
}

// splitReason cuts scontrol's " [user@time]" off a reason.
func splitReason(r string) (reason, by string) {
	r = strings.TrimSpace(r)
	if i := strings.LastIndex(r, " ["); i >= 0 && strings.HasSuffix(r, "]") {
		tag := r[i+2 : len(r)-1]
		if u, _, ok := strings.Cut(tag, "@"); ok {
			return strings.TrimSpace(r[:i]), u
		}
	}
	if r == "none" || r == "(null)" {
		return "", ""
	}
	return r, ""
}
