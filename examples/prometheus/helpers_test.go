// Package prometheus tests the Prometheus example (gpuprep.rules.yml, its
// unit tests gpuprep.rules.test.yml and gpuprep-dashboard.json) with
// Debian's promtool, prometheus and prometheus-node-exporter, which
// test/install-deps.sh installs.
package prometheus

import (
	"os"
	"os/exec"
	"testing"

	"gpuprep/internal/testroot"
)

// The example's files, in this directory (the tests' working directory).
const (
	rulesFile     = "gpuprep.rules.yml"
	rulesTestFile = "gpuprep.rules.test.yml"
	dashboardFile = "gpuprep-dashboard.json"
)

// need returns the path of the first of names found in PATH; when none
// is, it skips the test, or fails it in CI (CI=true).
func need(t *testing.T, names ...string) string {
	t.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	missing(t, names[0]+" not found (test/install-deps.sh installs it)")
	return ""
}

// missing skips the test with why, or fails it in CI (CI=true).
func missing(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s; CI=true makes this a failure", why)
	}
	t.Skip(why)
}

// repoRoot is the module's root (where examples/demo.sh runs from).
func repoRoot(t *testing.T) string {
	return testroot.Module(t)
}
