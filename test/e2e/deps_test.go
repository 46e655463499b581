package e2e

import (
	"os/exec"
	"strings"
	"testing"

	"gpuprep/internal/testroot"
)

// The layering docs/ARCHITECTURE.md promises, checked on the real import
// graph (go list -deps): the planner is pure data, configuration needs no
// GPU library, the engine knows no command line, and the programs link no
// test support.
func TestImportLayering(t *testing.T) {
	root, err := testroot.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	for pkg, banned := range map[string][]string{
		"./lib/plan":   {"github.com/NVIDIA/go-nvml", "github.com/BurntSushi/toml", "gpuprep/internal/", "gpuprep/lib/knob", "gpuprep/lib/config"},
		"./lib/config": {"github.com/NVIDIA/go-nvml"},
		"./lib/knob":   {"github.com/NVIDIA/go-nvml", "gpuprep/lib/config"},
		"./lib/hook":   {"gpuprep/lib/cli", "gpuprep/lib/hookcmd", "gpuprep/internal/"},
		"./prolog":     {"gpuprep/internal/"},
		"./epilog":     {"gpuprep/internal/"},
		"./gres":       {"gpuprep/internal/"},
		"./health":     {"gpuprep/internal/"},
		// gpuprep-health shares with the hooks what lib/textfile and
		// lib/cli hold, not their command line.
		"./lib/healthcmd": {"gpuprep/lib/hookcmd"},
		// srunwrap runs once per task: no TOML parser, configuration,
		// GPU backend or logging machinery to start up.
		"./srunwrap": {"gpuprep/internal/", "github.com/NVIDIA/go-nvml", "github.com/BurntSushi/toml", "gpuprep/lib/config",
			"gpuprep/lib/cli", "gpuprep/lib/health", "gpuprep/lib/knob", "gpuprep/lib/isolate", "log/syslog", "regexp"},
	} {
		cmd := exec.Command("go", "list", "-deps", pkg)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 10 {
			t.Fatalf("go list -deps %s: only %v", pkg, deps)
		}
		for _, d := range deps {
			for _, b := range banned {
				if d == strings.TrimSuffix(b, "/") || strings.HasPrefix(d, b) && (strings.HasSuffix(b, "/") || strings.HasPrefix(d, b+"/")) {
					t.Errorf("%s depends on %s", pkg, d)
				}
			}
		}
	}
}
