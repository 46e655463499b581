package hook

import (
	"errors"
	"fmt"
	"testing"

	"gpuprep/lib/config"
)

// A fatal health failure is the node's problem, never the job's profile's:
// it drains (a node error) and the user-profile fallback leaves it alone.
func TestHealthErrorSkipsFallback(t *testing.T) {
	err := fmt.Errorf("prolog: %w", &healthError{node: &NodeError{Reason: "health: GPU 3 (0000:5d:00.0): 2 volatile uncorrectable ECC errors"}})
	if !IsNodeError(err) || !isHealthError(err) {
		t.Fatalf("not a node error: %v", err)
	}
	cfg := config.Default()
	sel := config.Selection{Profile: "benchmark", Source: config.FromComment}
	if _, _, ok := fallbackFor(cfg, sel, err); ok {
		t.Error("a health failure fell back to another profile")
	}
	if _, _, ok := fallbackFor(cfg, sel, &NodeError{Reason: "required knob"}); !ok {
		t.Error("an ordinary node error no longer falls back")
	}
	if isHealthError(errors.New("x")) {
		t.Error("any error is a health error")
	}
}
