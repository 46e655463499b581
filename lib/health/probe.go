package health

import (
	"fmt"
	"strings"
	"time"

	"gpuprep/lib/config"
	"gpuprep/lib/probe"
	"gpuprep/lib/probetools"
	"gpuprep/lib/state"
)

// CodeProbeUnknown is the warning of a verdict that says nothing of the
// node now (too old, another boot or driver), or of a node never probed
// where probes are due ([health] probe_every).
const CodeProbeUnknown = "PROBE_UNKNOWN"

// ProbeCodes are the codes of the probes' findings: a drain for one lifts
// only on a newer passing verdict.
var ProbeCodes = []string{probe.CodePCIeSlow, probe.CodeHBMSlow, probe.CodeComputeSlow, probe.CodeP2PSlow,
	probe.CodeP2PNoPeer, probe.CodeProbeFailed, probetools.CodeDCGMDiagFailed, probetools.CodeAllReduceSlow,
	probetools.CodeAllReduceWrong, probetools.CodeIBLoopbackSlow}

// ProbeFacts is the saved verdict as the checks read it: its header and
// findings (the measurements are not decoded).
type ProbeFacts struct {
	Verdict *probe.Verdict // nil: none saved
	Err     error
	Now     time.Time
}

// verdictHead is the part of a saved verdict the checks read.
type verdictHead struct {
	Time     time.Time       `json:"time"`
	BootID   string          `json:"boot_id"`
	Driver   string          `json:"driver_version"`
	Forced   bool            `json:"forced"`
	Pass     bool            `json:"pass"`
	Findings []probe.Finding `json:"findings"`
}

// ReadVerdict reads the saved verdict's header and findings from the
// spool (probe.VerdictFile); nil when there is none.
func ReadVerdict(sp *state.Spool) (*probe.Verdict, error) {
	if sp == nil {
		return nil, nil
	}
	var h verdictHead
	found, err := sp.ReadJSON(probe.VerdictFile, &h)
	if err != nil || !found {
		return nil, err
	}
	return &probe.Verdict{Time: h.Time, BootID: h.BootID, Driver: h.Driver, Forced: h.Forced, Pass: h.Pass, Findings: h.Findings}, nil
}

// evalProbe judges the saved verdict: each finding on a GPU in scope is a
// failure with its code; a verdict that says nothing now (StatusOf) is a
// warning, never a pass; no verdict is skipped, or a warning where probes
// are due (probe_every set).
func evalProbe(f *Facts, e Expect) []Result {
	p := f.Probe
	if p.Err != nil {
		return []Result{unreadable("probe", nodeScope, fmt.Errorf("%s: %w", probe.VerdictFile, p.Err))}
	}
	status, why := probe.StatusOf(p.Verdict, probe.Now{Time: p.Now, BootID: f.BootID, Driver: f.Driver, MaxAge: e.Health.ProbeMaxAge})
	switch {
	case status == probe.StatusNone && e.Health.ProbeEvery == 0:
		return []Result{skip("probe", nodeScope, why)}
	case status == probe.StatusNone, status == probe.StatusUnknown:
		return []Result{probeUnknown(why)}
	case status == probe.StatusPass:
		return []Result{ok("probe", nodeScope, "passed at "+p.Verdict.Time.Format(time.RFC3339))}
	}
	return probeFindings(f, p.Verdict)
}

// probeUnknown is the warning of a verdict that says nothing now.
func probeUnknown(why string) Result {
	c, _ := CodeOf(CodeProbeUnknown)
	r := Result{Check: "probe", Scope: nodeScope, Status: Fail, Severity: "warn", Reason: "GPU speed unknown: " + why}
	return r.withCode(c)
}

// probeFindings are a failed verdict's findings on the GPUs in scope, one
// result each, named after its GPU.
func probeFindings(f *Facts, v *probe.Verdict) []Result {
	inScope := map[string]bool{}
	for _, g := range f.GPUs {
		inScope[g.Dev.BusID] = true
	}
	var out []Result
	for _, x := range v.Findings {
		if x.GPU >= 0 && !f.Whole && !inScope[x.BusID] {
			continue
		}
		c, known := CodeOf(x.Code)
		if !known {
			c = defaultCode("probe")
		}
		out = append(out, probeResult(x, v.Time).withCode(c))
	}
	if len(out) == 0 {
		return []Result{ok("probe", nodeScope, "the failed verdict names no GPU in scope")}
	}
	return out
}

// probeResult is a finding as a failed result: of its GPU, or of the node
// (a finding of a tool that names no GPU).
func probeResult(x probe.Finding, at time.Time) Result {
	when := " (probe of " + at.Format(time.RFC3339) + ")"
	if x.GPU < 0 {
		return Result{Check: "probe", Scope: nodeScope, Status: Fail, Reason: x.Reason + when}
	}
	scope := fmt.Sprintf("GPU %d (%s)", x.GPU, x.BusID)
	return Result{Check: "probe", Scope: scope, BusID: x.BusID, Status: Fail, Reason: scope + ": " + x.Reason + when}
}

// ProbeDrain says whether a drain reason is for a probe's finding
// ("gpuprep: HBM_SLOW ..."): such a drain lifts only on a newer passing
// verdict, not because the other checks pass.
func ProbeDrain(reason string) bool {
	rest, ok := strings.CutPrefix(reason, DrainPrefix)
	if !ok {
		for _, p := range hookHealthPrefixes {
			if rest, ok = strings.CutPrefix(reason, p); ok {
				break
			}
		}
	}
	if !ok {
		return false
	}
	code, _, _ := strings.Cut(rest, " ")
	for _, c := range ProbeCodes {
		if code == c {
			return true
		}
	}
	return false
}

// probeStatus is what the verdict read says now, for the report: "" when
// the probe check did not read one.
func probeStatus(f *Facts, h config.HealthSection) (probe.Status, *time.Time) {
	if f.Probe.Now.IsZero() || f.Probe.Err != nil {
		return "", nil
	}
	st, _ := probe.StatusOf(f.Probe.Verdict, probe.Now{Time: f.Probe.Now, BootID: f.BootID, Driver: f.Driver, MaxAge: h.ProbeMaxAge})
	if f.Probe.Verdict == nil {
		return st, nil
	}
	return st, &f.Probe.Verdict.Time
}
