package healthcmd

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"gpuprep/internal/gpumock"
	"gpuprep/internal/hooktest"
)

// promCount counts the samples of text whose line starts with prefix.
func promCount(text, prefix string) int {
	n := 0
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, prefix) {
			n++
		}
	}
	return n
}

// gpuprep-health.prom carries the saved verdict: never probed is status
// none alone; after a probe that finds GPU 3's memory slow, status fail,
// each GPU's values and floors, the peer copies and the finding, with the
// GPU labels; after a reboot the verdict is unknown, its values still there.
func TestProbeMetrics(t *testing.T) {
	n := newStandingNode(t)
	n.health(nil)
	prom := n.prom("gpuprep-health.prom")
	if promSample(prom, `gpuprep_probe_status{hook="health",status="none",`) != "1" || promCount(prom, "gpuprep_probe_") != 4 {
		t.Fatalf("never probed: want the status none alone:\n%s", prom)
	}

	n.setRates(map[string]gpumock.CUDARates{"0000:5d:00.0": {CopyGBps: 500}})
	if p := n.probe(); p.Verdict == nil || p.Verdict.Pass {
		t.Fatalf("probe of a slow GPU: exit %d verdict %+v", p.code, p.Verdict)
	}
	n.health(nil)
	prom = n.prom("gpuprep-health.prom")
	gpu3 := `gpu="3",UUID="`
	for prefix, want := range map[string]string{
		`gpuprep_probe_status{hook="health",status="fail",`:             "1",
		`gpuprep_probe_status{hook="health",status="pass",`:             "0",
		`gpuprep_probe_forced{hook="health",`:                           "0",
		`gpuprep_probe_finding{hook="health",code="HBM_SLOW",Hostname=`: "1",
	} {
		if got := promSample(prom, prefix); got != want {
			t.Errorf("%s... = %q, want %s", prefix, got, want)
		}
	}
	for name, want := range map[string]int{
		"gpuprep_probe_timestamp_seconds{": 1, "gpuprep_probe_h2d_gbps{": 8, "gpuprep_probe_d2h_gbps{": 8, "gpuprep_probe_hbm_gbps{": 8,
		"gpuprep_probe_fp32_tflops{": 8, `gpuprep_probe_floor{hook="health",probe="hbm",`: 8, "gpuprep_probe_p2p_gbps{": 56, "gpuprep_probe_finding{": 1,
	} {
		if got := promCount(prom, name); got != want {
			t.Errorf("%d samples of %s..., want %d", got, name, want)
		}
	}
	for _, line := range strings.Split(prom, "\n") {
		if strings.HasPrefix(line, "gpuprep_probe_hbm_gbps{") && strings.Contains(line, gpu3) {
			if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err != nil || math.Abs(v-1000) > 10 {
				t.Errorf("GPU 3's memory: %s, want about 1000", line)
			}
		}
		if strings.HasPrefix(line, "gpuprep_probe_finding{") && (!strings.Contains(line, gpu3) || !strings.Contains(line, `pci_bus_id="00000000:5D:00.0"`)) {
			t.Errorf("finding without GPU 3's labels: %s", line)
		}
	}

	hooktest.WriteRootFile(t, n.root, "proc/sys/kernel/random/boot_id", "99999999-2222-3333-4444-555555555555\n")
	n.health(nil)
	prom = n.prom("gpuprep-health.prom")
	if promSample(prom, `gpuprep_probe_status{hook="health",status="unknown",`) != "1" || promCount(prom, "gpuprep_probe_hbm_gbps{") != 8 {
		t.Errorf("after a reboot: want status unknown, the values still there:\n%s", prom)
	}
}
