package mps

import (
	"strings"
	"testing"
)

// TestRefuse: default and exclusive_process serve MPS; prohibited is
// refused with the reason, and so is any mode MPS cannot use.
func TestRefuse(t *testing.T) {
	for _, ok := range []string{"default", "exclusive_process", "Exclusive_Process", ""} {
		if err := Refuse(ok); err != nil {
			t.Errorf("Refuse(%q) = %v", ok, err)
		}
	}
	if err := Refuse("prohibited"); err == nil || !strings.Contains(err.Error(), "forbids any CUDA context") {
		t.Errorf("Refuse(prohibited) = %v", err)
	}
	for _, bad := range []string{"exclusive_thread", "unknown(7)"} {
		if err := Refuse(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("Refuse(%q) = %v", bad, err)
		}
	}
}
