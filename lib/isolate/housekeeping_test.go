package isolate

import (
	"testing"

	"gpuprep/internal/testroot"
	"gpuprep/lib/host"
	"gpuprep/lib/topo"
)

func TestParseSpec(t *testing.T) {
	for in, want := range map[string]Spec{
		"3,0-2": "0-3", " 0-1 ": "0-1", "": "", "cores_per_numa:1": "cores_per_numa:1", "cores_per_socket:02": "cores_per_socket:2",
	} {
		if got, err := ParseSpec(in); err != nil || got != want {
			t.Errorf("ParseSpec(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"x", "cores_per_numa:0", "cores_per_numa:65", "cores_per_core:1", "3-1"} {
		if _, err := ParseSpec(bad); err == nil {
			t.Errorf("ParseSpec(%q) took it", bad)
		}
	}
}

// The housekeeping CPUs on fixture roots: whole cores (SMT siblings
// together), lowest first, per NUMA node or socket.
func TestHousekeepingOnShapes(t *testing.T) {
	for _, c := range []struct {
		shape, spec, want string
	}{
		// dgxh100: 2 sockets x 56 cores x 2 threads, split numbering
		// (CPU c and c+112 are one core), one NUMA node per socket.
		{"dgxh100", "cores_per_numa:1", "0,56,112,168"},
		{"dgxh100", "cores_per_socket:2", "0-1,56-57,112-113,168-169"},
		{"dgxh100", "0-3", "0-3"},
		// thunderx2: compact numbering (a core's 4 threads consecutive), 28 cores per socket.
		{"thunderx2", "cores_per_socket:1", "0-3,112-115"},
	} {
		root := host.NewRoot(testroot.Unpack(t, c.shape))
		n, err := topo.Discover(root, nil, topo.Options{})
		if err != nil {
			t.Fatal(err)
		}
		set, err := Housekeeping(Spec(c.spec), n)
		if err != nil {
			t.Fatalf("%s %s: %v", c.shape, c.spec, err)
		}
		if set.String() != c.want {
			t.Errorf("%s %s = %s, want %s", c.shape, c.spec, set, c.want)
		}
	}
	root := host.NewRoot(testroot.Unpack(t, "dgxh100"))
	n, _ := topo.Discover(root, nil, topo.Options{})
	if _, err := Housekeeping("0-300", n); err == nil {
		t.Error("a CPU list beyond the node's CPUs was taken")
	}
}
