package health

import (
	"fmt"
	"strings"

	"gpuprep/lib/probe"
	"gpuprep/lib/slurm"
)

// orNone is s, or "none" when empty.
func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// DrainPrefix starts every drain reason gpuprep-health sets.
const DrainPrefix = "gpuprep: "

// hookHealthPrefixes start the drain reasons of the hooks' health failures
// (general.drain_reason): gpuprep-health checks them again, so it may lift
// them too.
var hookHealthPrefixes = []string{"gpuprep-prolog: " + ReasonPrefix, "gpuprep-epilog: " + ReasonPrefix}

// OwnsDrain says whether a drain reason is gpuprep's health verdict, which
// gpuprep-health may lift once every check passes: one it set itself
// ("gpuprep: ..."), or a hook's health failure. A drain an admin or another
// tool (NHC, Slurm's "Prolog error", a hook's failure to apply a setting)
// set is never gpuprep-health's to lift: NHC's rule.
func OwnsDrain(reason string) bool {
	if strings.HasPrefix(reason, DrainPrefix) {
		return true
	}
	for _, p := range hookHealthPrefixes {
		if strings.HasPrefix(reason, p) {
			return true
		}
	}
	return false
}

// Action is what gpuprep-health does to the node in Slurm.
type Action string

// Actions.
const (
	Nothing Action = "none"
	Drain   Action = "drain"
	Resume  Action = "resume"
)

// Decision is the action, the drain reason (Drain only) and why, for the
// log.
type Decision struct {
	Action Action `json:"action"`
	Reason string `json:"drain_reason,omitempty"`
	Why    string `json:"why"`
}

// DrainReason is the reason gpuprep-health drains a node with: DrainPrefix,
// the first fatal failure's code, what to do (its action) and its reason
// (which names the GPU), and how many more there are: "gpuprep: XID79
// reboot: GPU 0 (0000:18:00.0): Xid 79 (GPU has fallen off the bus) (+1
// more)". gpuprep-health --explain XID79 says more.
func DrainReason(fatal []Result) string {
	if len(fatal) == 0 {
		return ""
	}
	f := fatal[0]
	s := DrainPrefix + f.Check + ": " + f.Reason // a result made by hand carries no code
	if f.Code != "" {
		s = DrainPrefix + f.CodedReason()
	}
	if len(fatal) > 1 {
		s += fmt.Sprintf(" (+%d more)", len(fatal)-1)
	}
	return s
}

// Decide is gpuprep-health's verdict on a node from this run's report and
// the node's state in Slurm (known false when scontrol could not tell):
//   - a fatal failure drains the node, unless it is drained already (by
//     gpuprep: kept as it is; by anyone else: left alone);
//   - with no fatal failure, a node gpuprep drained (OwnsDrain) is resumed;
//     a fatal Xid that still stands against a GPU (StandingXIDs) is a
//     fatal failure of every run until the GPU is cleared, so a drain for
//     it is never lifted because no new Xid came, and a node resumed
//     without clearing it is drained again;
//   - a drain for a probe's finding (ProbeDrain) is lifted only when the
//     saved verdict passes now (a newer probe passed): a verdict too old
//     to say anything is never a reason to resume;
//   - any other drain is left alone.
//
// It does no I/O.
func Decide(rep *Report, node slurm.NodeState, known bool) Decision {
	if fatal := rep.Fatal(); len(fatal) > 0 {
		reason := DrainReason(fatal)
		switch {
		case known && node.Drained() && OwnsDrain(node.Reason):
			return Decision{Action: Nothing, Why: "already drained by gpuprep (" + node.Reason + "); now: " + reason}
		case known && node.Drained():
			return Decision{Action: Nothing, Why: fmt.Sprintf("drained by someone else (%q), left alone; now: %s", node.Reason, reason)}
		}
		return Decision{Action: Drain, Reason: reason, Why: reason}
	}
	switch {
	case !known:
		return Decision{Action: Nothing, Why: "healthy; the node's state in Slurm is unknown"}
	case !node.Drained():
		return Decision{Action: Nothing, Why: "healthy"}
	case !OwnsDrain(node.Reason):
		return Decision{Action: Nothing, Why: fmt.Sprintf("healthy, but drained by someone else (%q): left alone", node.Reason)}
	case ProbeDrain(node.Reason) && rep.Probe != probe.StatusPass:
		return Decision{Action: Nothing, Why: fmt.Sprintf("healthy, but drained for a probe's finding (%s): only a newer passing probe verdict lifts it (gpuprep-health --probe); the verdict now: %s", node.Reason, orNone(string(rep.Probe)))}
	}
	return Decision{Action: Resume, Why: "every check passes; resuming the node gpuprep drained (" + node.Reason + ")"}
}
