package pkgtest

import (
	"strings"
	"testing"
)

// TestMetadata: both packages suggest what gpuprep works with (slurmd,
// irqbalance) under each distribution's package name.
func TestMetadata(t *testing.T) {
	t.Parallel()
	tools := need(t, "dpkg-deb", "rpm")
	deb, rpm := packages(t)
	if got := strings.TrimSpace(run(t, tools[0], "-f", deb, "Suggests")); got != "slurmd, irqbalance" {
		t.Errorf("the deb's Suggests: %q, want \"slurmd, irqbalance\"", got)
	}
	got := strings.Fields(run(t, tools[1], "-qp", "--suggests", rpm))
	if !contains(got, "slurm-slurmd", "irqbalance") {
		t.Errorf("the rpm suggests %q, want slurm-slurmd and irqbalance", got)
	}
}
