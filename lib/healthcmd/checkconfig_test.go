package healthcmd

import (
	"os"
	"strings"
	"testing"
)

// gpuprep-health --check-config checks the hooks' configuration as
// gpuprep-prolog --check-config does: valid (0), or the file and line of
// what is wrong (2); it writes nothing to the spool.
func TestCheckConfig(t *testing.T) {
	h := newHealthRunner(t)
	code, out, stderr := h.health("--check-config")
	if code != 0 || !strings.Contains(out, "is valid") {
		t.Errorf("a valid file: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	// The fixture has no /run/systemd/system: how isolation would go, and
	// why, is said as the hooks' --check-config says it.
	if !strings.Contains(out, "\nisolation: cgroup v2: housekeeping_cpus writes each service's cpuset.cpus directly (cgroupfs): systemd is not PID 1 (no /run/systemd/system)\n") {
		t.Errorf("no isolation line: %q", out)
	}
	if _, err := os.Stat(h.spool); !os.IsNotExist(err) {
		t.Errorf("--check-config made the spool: %v", err)
	}
	os.WriteFile(h.cfg, []byte("[general]\nlog_file = \"\"\n[profiles.default]\nvm_swappiness = 500\n"), 0o644)
	code, _, stderr = h.health("--check-config")
	if code != 2 || !strings.Contains(stderr, "g.toml:4:") {
		t.Errorf("vm_swappiness = 500: exit %d, stderr %q; want 2 naming g.toml:4", code, stderr)
	}
}
