package hook

import (
	"context"
	"encoding/json"
	"gpuprep/lib/plan"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpuprep/lib/config"
)

// A profile the user picks that this node cannot apply (its required power
// limit is above the H100's 700 W) never drains the node: the prolog falls
// back as selection.unfit_profile says and keeps the reason in the job's
// record. The admin's default profile failing still fails the prolog.
func TestUserProfileFallback(t *testing.T) {
	const cfg = testConfig + `
[profiles.toohot]
inherits = "default"
gpu_power_limit_w = 1000
required = ["gpu_power_limit_w"]
`
	for _, tc := range []struct {
		unfit       string
		wantErr     bool
		wantProfile string
		wantPower   string // GPU 0's power limit after the prolog, W
	}{
		{"default", false, "default", "700"},
		{"drop", false, "toohot", "700"},
		{"fail", true, "toohot", "700"},
	} {
		t.Run(tc.unfit, func(t *testing.T) {
			e := newEnv(t, "dgxh100", "mock:dgxh100")
			c, err := config.Parse("test.toml", []byte(cfg+"[selection]\nunfit_profile = \""+tc.unfit+"\"\n"))
			if err != nil {
				t.Fatal(err)
			}
			e.cfg = c
			out, err := Prolog(context.Background(), e.opts(5, []int{0}, "gpuprep=toohot"))
			if (err != nil) != tc.wantErr {
				t.Fatalf("prolog error %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				if !IsNodeError(err) || !strings.Contains(err.Error(), "gpu_power_limit_w") {
					t.Errorf("error %v", err)
				}
				return
			}
			if out.Profile != tc.wantProfile || !strings.Contains(out.Fallback, `profile "toohot" cannot be applied`) {
				t.Errorf("profile %q, fallback %q", out.Profile, out.Fallback)
			}
			if s := e.settings(0); s.PowerLimitMW != 700000 || !s.Persistence {
				t.Errorf("GPU 0 after the fallback: %+v", s)
			}
			var rec JobRecord
			b, err := os.ReadFile(filepath.Join(e.spool.Dir(), jobFile("5")))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &rec); err != nil || rec.Fallback != out.Fallback || rec.Profile != tc.wantProfile {
				t.Errorf("job record: profile %q fallback %q (%v)", rec.Profile, rec.Fallback, err)
			}
			if e.read("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor") != "performance" {
				t.Error("the fallback did not apply the node knobs")
			}
		})
	}
	// The default profile failing is the node's problem.
	e := newEnv(t, "dgxh100", "mock:dgxh100")
	c, err := config.Parse("test.toml", []byte(cfg+"[selection]\ndefault_profile = \"toohot\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	e.cfg = c
	if _, err := Prolog(context.Background(), e.opts(6, []int{0}, "")); err == nil || !IsNodeError(err) {
		t.Errorf("default profile that cannot apply: %v", err)
	}
}

// --gpu-backend none ignores GPUs: a GPU job gets its node knobs and a
// warning, not a failure.
func TestBackendNoneIgnoresGPUs(t *testing.T) {
	e := newEnv(t, "dgxh100", "none")
	out := e.prolog(8, []int{0, 1}, "")
	if e.read("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor") != "performance" {
		t.Error("node knobs not applied")
	}
	for _, c := range out.Changes {
		if strings.HasPrefix(c.ID.Scope, "gpu:") {
			t.Errorf("GPU change with backend none: %+v", c)
		}
	}
	if !strings.Contains(strings.Join(plan.Texts(out.Warnings), "\n"), "GPU knobs skipped") {
		t.Errorf("warnings %q", out.Warnings)
	}
	e.epilog(8)
}
