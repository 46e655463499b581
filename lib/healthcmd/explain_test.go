package healthcmd

import (
	"bytes"
	"strings"
	"testing"

	"gpuprep/lib/cli"
)

// explainRun runs gpuprep-health with args and an environment that names
// no config: --explain must need none.
func explainRun(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(cli.Env{Args: args, Getenv: func(string) string { return "" }, Stdout: &out, Stderr: &errb})
	return code, out.String(), errb.String()
}

// --explain CODE tells what a drain reason's code means and what to do,
// without a config or root; an unknown code is bad input with a pointer to
// the list, which names every check's codes and the catalog's Xids.
func TestExplain(t *testing.T) {
	code, out, stderr := explainRun("--explain", "XID79", "--config", "/nonexistent/gpuprep.toml")
	if code != 0 || !strings.Contains(out, "action: reboot") || !strings.Contains(out, "RESTART_BM") || stderr != "" {
		t.Errorf("--explain XID79: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, _ := explainRun("--explain", "pcie_degraded"); code != 0 || !strings.Contains(out, "PCIE_DEGRADED (check pcie_link)") {
		t.Errorf("--explain pcie_degraded: exit %d\n%s", code, out)
	}
	code, _, stderr = explainRun("--explain", "XID_PLEASE")
	if code != 2 || !strings.Contains(stderr, `"XID_PLEASE": no such code`) || strings.Count(stderr, "\n") != 1 {
		t.Errorf("--explain of nothing: exit %d %q", code, stderr)
	}
	code, out, _ = explainRun("--explain", "list")
	for _, want := range []string{"GPU_MISSING", "ROW_REMAP_FAILED", "RECOVERY_NODE_REBOOT", "XID79", "XID48", "XID13"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("--explain list: exit %d, no %s", code, want)
		}
	}
	if strings.Contains(out, "XID1 ") || strings.Contains(out, "XID7 ") {
		t.Error("--explain list names Xids NVIDIA lists as unused")
	}
}
