package nodeshape

import "testing"

// TestTopologyShapes pins the CPU-topology shapes' promises (see the
// "Numbers that matter to tests" comment).
func TestTopologyShapes(t *testing.T) {
	want := []string{"dgxh100", "dgxa100", "cloudvm", "dgxb200", "gh200",
		"snc2xeon", "bulldozer", "altra", "thunderx2", "oldkernel"}
	all := All()
	if len(all) != len(want) {
		t.Fatalf("%d shapes, want %d", len(all), len(want))
	}
	for i, s := range all {
		if s.Name != want[i] {
			t.Errorf("shape %d is %s, want %s", i, s.Name, want[i])
		}
		if s.CoreIDs != nil && len(s.CoreIDs) != s.CoresPerSocket {
			t.Errorf("%s: %d CoreIDs for %d cores", s.Name, len(s.CoreIDs), s.CoresPerSocket)
		}
		if s.ComputeUnitCores > 1 && (s.ThreadsPerCore != 1 || s.CoresPerSocket%s.ComputeUnitCores != 0) {
			t.Errorf("%s: compute units of %d cores with %d threads, %d cores", s.Name,
				s.ComputeUnitCores, s.ThreadsPerCore, s.CoresPerSocket)
		}
		for _, g := range s.GPUs {
			if s.GPUModel == "" && g.MIG {
				t.Errorf("%s: MIG without a mock", s.Name)
			}
		}
	}

	x, _ := ByName("snc2xeon")
	if x.Numbering != "socket-interleaved" || !x.NUMAInterleave || x.NUMAPerSocket != 2 ||
		x.Sockets*x.CoresPerSocket*x.ThreadsPerCore != 80 || x.GPUModel != "" {
		t.Errorf("snc2xeon: %+v", x)
	}
	for i, g := range x.GPUs {
		if g.NUMANode != i || g.DeviceID != 0x1db6 || g.Minor != i {
			t.Errorf("snc2xeon GPU %d: node %d device %#x minor %d", i, g.NUMANode, g.DeviceID, g.Minor)
		}
	}
	if b, _ := ByName("bulldozer"); b.ComputeUnitCores != 2 || b.ThreadsPerCore != 1 || b.CoresPerSocket != 16 {
		t.Errorf("bulldozer: %+v", b)
	}
	if a, _ := ByName("altra"); !a.ListNUL || a.ClusterCores != 2 || a.CPUVendor != "" || a.CoresPerSocket != 80 {
		t.Errorf("altra: %+v", a)
	}
	if tx, _ := ByName("thunderx2"); tx.Numbering != "compact" || !tx.PackageIDUnknown || tx.ThreadsPerCore != 4 {
		t.Errorf("thunderx2: %+v", tx)
	}
	o, _ := ByName("oldkernel")
	if !o.OldKernel || len(o.OfflineCPUs) != 2 || o.OfflineCPUs[0] != 7 || o.OfflineCPUs[1] != 15 {
		t.Errorf("oldkernel: %+v", o)
	}
	// The original shapes keep today's behaviour: every new field zero.
	for _, s := range all[:5] {
		if s.Numbering != "" || s.NUMAInterleave || s.CoreIDs != nil || s.ComputeUnitCores != 0 ||
			s.ClusterCores != 0 || s.ListNUL || s.PackageIDUnknown || s.OldKernel || s.OfflineCPUs != nil {
			t.Errorf("%s uses a CPU-topology feature", s.Name)
		}
	}
}
