package config

import (
	"strings"
	"testing"
)

func TestHealthDefaults(t *testing.T) {
	c := Default()
	h := c.Health
	if !h.Prolog || !h.Epilog || h.Swap != "any" || h.HealthSeverity("xid") != HealthFatal || h.HealthDebounce("pcie_link") != 3 || h.HealthDebounce("ecc_volatile") != 1 {
		t.Errorf("defaults: %+v", h)
	}
	for _, c := range HealthChecks {
		if _, ok := h.Severity[c]; !ok {
			t.Errorf("defaults.toml sets no severity for %s", c)
		}
	}
}

func TestHealthValidation(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"[health.severity]\necc_volatil = \"fatal\"\n", `t.toml:2: health.severity.ecc_volatil: no such check`},
		{"[health.severity]\nxid = \"drain\"\n", `t.toml:2: health.severity.xid = "drain": must be one of fatal, warn, off`},
		{"[health.debounce]\nthrottle = 0\n", `t.toml:2: health.debounce.throttle = 0: must be 1..100`},
		{"[health]\nswap = \"no\"\n", `health.swap = "no": must be one of off, any`},
		{"[health]\ndriver_min = \"r550\"\n", `must be a version`},
		{"[health]\nexternal_command = [\"dcgmi\", \"diag\"]\n", `must be an absolute path`},
		{"[health]\nxid_warn = [79]\n", `XID 79 is also in health.xid_fatal`},
		{"[health]\nnvlinks = -2\n", `health.nvlinks = -2`},
		{"[health]\napp_xid_jobs = 1\n", `t.toml:2: health.app_xid_jobs = 1: one job's faults are the job's`},
		{"[health]\napp_xid_jobs = 33\n", `t.toml:2: health.app_xid_jobs = 33: must be 0 (never) or 2..32`},
		{"[health]\napp_xid_jobs_severity = \"off\"\n", `t.toml:2: health.app_xid_jobs_severity = "off": must be one of fatal, warn`},
		{"[health]\nexternal_timeout = 5\n", `t.toml:2: health.external_timeout = 5: must be a duration`},
		{"[health]\nexternal_command = [\"/usr/bin/dcgmi\"]\nexternal_timeout = \"30s\"\n", `health.external_timeout = "30s": must be below general.deadline (30s)`},
	} {
		_, err := Parse("t.toml", []byte(tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.src, err, tc.want)
		}
	}
	if _, err := Parse("t.toml", []byte("[health]\napp_xid_jobs = 0\nswap = \"off\"\nexternal_command = [\"/usr/bin/dcgmi\", \"diag\", \"-r\", \"1\"]\n[health.severity]\npcie_link = \"fatal\"\n")); err != nil {
		t.Errorf("good file: %v", err)
	}
}
