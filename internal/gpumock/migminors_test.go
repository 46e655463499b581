package gpumock

import "testing"

// The driver's table (as captured on the 2x H200 node) and the formula the
// mock uses for a root without one agree.
func TestDriverMIGMinorsFormula(t *testing.T) {
	shape, ok := mockShape("dgxa100")
	if !ok {
		t.Skip("no dgxa100 shape")
	}
	m := driverMIGMinors(shape)
	for _, g := range shape.GPUs {
		for _, d := range g.MIGDevices {
			if m.GI(g.Minor, d.GI) != d.GICapMinor || m.CI(g.Minor, d.GI, d.CI) != d.CICapMinor {
				t.Errorf("gpu%d gi%d ci%d: formula %d/%d, shape %d/%d", g.Minor, d.GI, d.CI,
					m.GI(g.Minor, d.GI), m.CI(g.Minor, d.GI, d.CI), d.GICapMinor, d.CICapMinor)
			}
		}
	}
	if m.GI(0, 0) != 3 || m.CI(0, 0, 1) != 5 || m.GI(0, 1) != 12 {
		t.Errorf("gpu0 entries: %d %d %d", m.GI(0, 0), m.CI(0, 0, 1), m.GI(0, 1))
	}
}
