package health

import (
	"slices"
	"strings"
	"testing"

	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
)

// Every check has a code for its failures, every code one name, and each
// code --explain knows says what to do.
func TestCodes(t *testing.T) {
	names := map[string]bool{}
	for _, c := range Codes() {
		if names[c.Name] {
			t.Errorf("code %s twice", c.Name)
		}
		names[c.Name] = true
		if !slices.Contains(actionOrder, c.Action) || c.Means == "" || c.Do == "" || !slices.Contains(config.HealthChecks, c.Check) {
			t.Errorf("code %+v: action, meaning, what to do and check wanted", c)
		}
		if text, ok := Explain(strings.ToLower(c.Name)); !ok || !strings.Contains(text, string(c.Action)) {
			t.Errorf("Explain(%s) = %q, %v", c.Name, text, ok)
		}
	}
	for _, check := range config.HealthChecks {
		if c := defaultCode(check); !names[c.Name] {
			t.Errorf("check %s fails with %s, which Codes does not list", check, c.Name)
		}
	}
	if _, ok := Explain("NO_SUCH_CODE"); ok {
		t.Error("Explain of an unknown code")
	}
	if c, ok := CodeOf("XID07"); ok {
		t.Errorf("XID07 read as %+v", c)
	}
}

// The catalog is ascending with one row per Xid, and its buckets map to
// the classes NVIDIA's words say: Xid 79 (off the bus) reboots, 48
// (uncorrectable ECC) resets the GPU, 13 (an SM exception) is the
// application's, 54 (aux power) needs hands on the node.
func TestXIDCatalog(t *testing.T) {
	cat := XIDCatalog()
	if !slices.IsSortedFunc(cat, func(a, b XIDEntry) int { return a.XID - b.XID }) {
		t.Fatal("catalog not in ascending order")
	}
	for i := 1; i < len(cat); i++ {
		if cat[i].XID == cat[i-1].XID {
			t.Errorf("Xid %d twice", cat[i].XID)
		}
	}
	for n, want := range map[int]ActionClass{79: ClassReboot, 48: ClassResetGPU, 13: ClassRestartApp, 54: ClassCheckHardware,
		95: ClassResetGPU, 43: ClassNone, 74: ClassInvestigate, 9999: ClassInvestigate} {
		if c := xidCode(n); c.Action != want || c.Check != "xid" {
			t.Errorf("Xid %d: %+v, want %s", n, c, want)
		}
	}
	if text, ok := Explain("XID79"); !ok || !strings.Contains(text, "RESTART_BM") || !strings.Contains(text, xidCatalogSource) {
		t.Errorf("Explain(XID79) = %q", text)
	}
}

// A GPU's xid result carries the code of its worst finding: of the fatal
// ones, the one that does the most; a warning never hides a fatal one.
func TestXIDResultCode(t *testing.T) {
	var p codePick
	p.add(xidCode(13), config.HealthWarn)
	p.add(xidCode(48), config.HealthFatal)
	p.add(recoveryCode(gpu.RecoveryGPUReset), config.HealthFatal)
	if p.best.Name != "XID48" {
		t.Errorf("picked %s, want XID48 (the first fatal of the strongest action)", p.best.Name)
	}
	p.add(xidCode(79), config.HealthFatal)
	p.add(xidCode(94), config.HealthFatal)
	if p.best.Name != "XID79" {
		t.Errorf("picked %s, want XID79 (reboot over a reset)", p.best.Name)
	}
	if c := recoveryCode(gpu.RecoveryAction(99)); c.Name != "RECOVERY_UNKNOWN" {
		t.Errorf("an action NVML added later: %+v", c)
	}
}
