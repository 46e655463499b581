package probetools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// dcgmArgs run DCGM's medium diagnostic (level 2) with JSON output.
var dcgmArgs = []string{"diag", "-r", "2", "-j"}

// runDCGM runs `dcgmi diag -r 2 -j` and reads its JSON (see parseDCGM).
// dcgmi exits non-zero when a test fails, so the exit status alone says
// nothing: a run counts when its JSON holds test results.
func runDCGM(ctx context.Context, t Tool, timeout time.Duration) Result {
	r := Result{Tool: t.Name, Version: t.Version, Args: dcgmArgs}
	o := runTool(ctx, timeout, t.Path, dcgmArgs...)
	r.Seconds = o.Seconds
	if o.TimedOut {
		r.Error = failure(o, "dcgmi diag")
		return r
	}
	d, err := parseDCGM([]byte(o.Stdout))
	if err != nil {
		r.Error = failure(o, fmt.Sprintf("dcgmi diag: %v", err))
		return r
	}
	if r.Version == "" {
		r.Version = d.Version
	}
	r.Pass = boolp(len(d.Failed) == 0)
	r.Failed = d.Failed
	return r
}

// dcgmDoc is the JSON of `dcgmi diag -j`, in both layouts (read from
// NVIDIA/DCGM: dcgmi/Diag.cpp and testing/python3/dcgm_diag_schema.json at
// DCGM 2.2.6, 3.3.9 and 4.6.0):
//
// DCGM 2.x and 3.x: {"DCGM GPU Diagnostic": {"test_categories": [{
// "category", "tests": [{"name", "results": [{"gpu_id" (a string "0";
// a number in the Deployment tests; "gpu_ids" in 2.x), "status"
// (Pass|Fail|Skip), "warnings": [{"warning" ("warnings" in the
// Deployment tests), "error_id", "error_category", "error_severity"}],
// "info" (a string)}]}]}]}, "version", "Driver Version Detected", ...}.
//
// DCGM 4.x: {"DCGM Diagnostic": {"test_categories": [{"category",
// "tests": [{"name", "results": [{"entity_group" ("GPU", "CPU"...),
// "entity_group_id", "entity_id", "status", "warnings": [...],
// "info": [strings]}], "test_summary": {"status", "warnings", "info"}}]}]},
// "entity_groups": [...], "metadata": {"version", "Driver Version
// Detected"}}.
//
// Both write a status of Pass, Skip or Fail: a warning (such as
// persistence mode off) is written "Fail", as dcgmi's exit status counts
// it.
//
// Both: {"<name>": {"version", "runtime_error"}} when the diagnostic could
// not run.
type dcgmDoc struct {
	V3       *dcgmDiag `json:"DCGM GPU Diagnostic"`
	V4       *dcgmDiag `json:"DCGM Diagnostic"`
	Version  string    `json:"version"`
	Metadata struct {
		Version string `json:"version"`
	} `json:"metadata"`
}

type dcgmDiag struct {
	Categories []struct {
		Category string     `json:"category"`
		Tests    []dcgmTest `json:"tests"`
	} `json:"test_categories"`
	RuntimeError string `json:"runtime_error"`
	Version      string `json:"version"`
}

type dcgmTest struct {
	Name    string      `json:"name"`
	Results []dcgmEntry `json:"results"`
	Summary *dcgmEntry  `json:"test_summary"`
}

type dcgmEntry struct {
	Status      string          `json:"status"`
	GPUID       json.RawMessage `json:"gpu_id"`
	GPUIDs      json.RawMessage `json:"gpu_ids"`
	EntityGroup string          `json:"entity_group"`
	EntityID    *int            `json:"entity_id"`
	Warnings    []dcgmWarning   `json:"warnings"`
	Info        json.RawMessage `json:"info"`
}

type dcgmWarning struct {
	Warning  string `json:"warning"`
	Warnings string `json:"warnings"` // DCGM 3's Deployment tests
	ErrorID  int    `json:"error_id"`
	Severity int    `json:"error_severity"`
}

// dcgmRead is what parseDCGM read: the DCGM version and the failed tests.
type dcgmRead struct {
	Version string
	Failed  []string
}

// parseDCGM reads dcgmi diag's JSON (the first JSON object in out; dcgmi
// may print lines before it). It is an error when there is no JSON, when
// DCGM says the diagnostic could not run (runtime_error), or when no
// test has a result.
func parseDCGM(out []byte) (dcgmRead, error) {
	i := bytes.IndexByte(out, '{')
	if i < 0 {
		return dcgmRead{}, errors.New("no JSON in its output")
	}
	var doc dcgmDoc
	if err := json.NewDecoder(bytes.NewReader(out[i:])).Decode(&doc); err != nil {
		return dcgmRead{}, fmt.Errorf("reading its JSON: %w", err)
	}
	diag := doc.V4
	if diag == nil {
		diag = doc.V3
	}
	if diag == nil {
		return dcgmRead{}, errors.New(`its JSON has neither "DCGM Diagnostic" nor "DCGM GPU Diagnostic"`)
	}
	read := dcgmRead{Version: firstNonEmpty(doc.Metadata.Version, doc.Version, diag.Version)}
	if diag.RuntimeError != "" {
		return read, fmt.Errorf("DCGM could not run the diagnostic: %s", strings.TrimSpace(diag.RuntimeError))
	}
	ran := 0
	for _, c := range diag.Categories {
		for _, t := range c.Tests {
			if len(t.Results) > 0 || t.Summary != nil {
				ran++
			}
			read.Failed = append(read.Failed, failedIn(t)...)
		}
	}
	if ran == 0 {
		return read, errors.New("no test results in its JSON")
	}
	return read, nil
}

// failedIn lists a test's failed results, one per entity; a test summary
// that failed with no failed entity (DCGM 4) gives one without a GPU.
func failedIn(t dcgmTest) []string {
	var out []string
	for _, e := range t.Results {
		if isFail(e.Status) {
			out = append(out, describeFailure(t.Name, e))
		}
	}
	if len(out) == 0 && t.Summary != nil && isFail(t.Summary.Status) {
		out = append(out, describeFailure(t.Name, *t.Summary))
	}
	return out
}

func isFail(status string) bool { return strings.EqualFold(strings.TrimSpace(status), "fail") }

// describeFailure writes a failed result as Result.Failed has it.
func describeFailure(test string, e dcgmEntry) string {
	msg := failureMessage(e)
	if gpu, ok := e.gpu(); ok {
		return fmt.Sprintf("GPU %d: %s: %s", gpu, test, msg)
	}
	if e.EntityGroup != "" && e.EntityID != nil {
		return fmt.Sprintf("%s %d: %s: %s", e.EntityGroup, *e.EntityID, test, msg)
	}
	return fmt.Sprintf("%s: %s", test, msg)
}

// failureMessage is a failed result's warnings (with DCGM's error code
// and severity), else its info, else "failed".
func failureMessage(e dcgmEntry) string {
	var parts []string
	for _, w := range e.Warnings {
		text := strings.TrimSpace(firstNonEmpty(w.Warning, w.Warnings))
		if text == "" {
			continue
		}
		if w.ErrorID != 0 {
			text += fmt.Sprintf(" (DCGM error %d, severity %s)", w.ErrorID, severityName(w.Severity))
		}
		parts = append(parts, text)
	}
	if len(parts) == 0 {
		parts = infoStrings(e.Info)
	}
	if len(parts) == 0 {
		return "failed"
	}
	return strings.Join(parts, "; ")
}

// gpu is the GPU a result is for: entity_id of a "GPU" entity (DCGM 4),
// or gpu_id / gpu_ids (DCGM 2 and 3, a string or a number; -1 in a
// Deployment test's error that is for no GPU).
func (e dcgmEntry) gpu() (int, bool) {
	if e.EntityID != nil {
		return *e.EntityID, strings.EqualFold(e.EntityGroup, "GPU")
	}
	for _, raw := range []json.RawMessage{e.GPUID, e.GPUIDs} {
		s := strings.Trim(strings.TrimSpace(string(raw)), `"`)
		if n, err := strconv.Atoi(s); err == nil && n >= 0 { // -1: no GPU
			return n, true
		}
	}
	return 0, false
}

// infoStrings reads "info": a string (DCGM 3) or a list of them (DCGM 4).
func infoStrings(raw json.RawMessage) []string {
	var one string
	if json.Unmarshal(raw, &one) == nil && strings.TrimSpace(one) != "" {
		return []string{strings.TrimSpace(one)}
	}
	var many []string
	_ = json.Unmarshal(raw, &many)
	return many
}

// severityName names dcgmErrorSeverity_t (dcgm_errors.h).
func severityName(s int) string {
	names := []string{"none", "monitor", "isolate", "unknown", "triage", "config", "reset"}
	if s >= 0 && s < len(names) {
		return names[s]
	}
	return strconv.Itoa(s)
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
