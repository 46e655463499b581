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
	if _, err := os.Stat(h.spool); !os.IsNotExist(err) {
		t.Errorf("--check-config made the spool: %v", err)
	}
	os.WriteFile(h.cfg, []byte("[general]\nlog_file = \"\"\n[profiles.default]\nvm_swappiness = 500\n"), 0o644)
	code, _, stderr = h.health("--check-config")
	if code != 2 || !strings.Contains(stderr, "g.toml:4:") {
		t.Errorf("vm_swappiness = 500: exit %d, stderr %q; want 2 naming g.toml:4", code, stderr)
	}
}
