package topo

import (
	"slices"
	"strings"
	"testing"
)

func TestParseNUMAStatus(t *testing.T) {
	got, err := parseNUMAStatus("f", []byte("Node: 4\nStatus: online\nOffline memory blocks:\n"))
	if err != nil || !slices.Equal(got, []int{4}) {
		t.Errorf("got %v, %v", got, err)
	}
	if got, err := parseNUMAStatus("f", []byte("Status: offline\n")); err != nil || got != nil {
		t.Errorf("no node: %v, %v", got, err)
	}
	if _, err := parseNUMAStatus("/proc/driver/nvidia/gpus/x/numa_status", []byte("Node: -2\n")); err == nil ||
		!strings.Contains(err.Error(), "/proc/driver/nvidia/gpus/x/numa_status") {
		t.Errorf("garbage: %v", err)
	}
}
