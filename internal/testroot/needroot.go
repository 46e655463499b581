package testroot

import (
	"os"
	"testing"
)

// NeedRoot skips a test that needs root (why says for what: "chown", "another
// uid"), except under CI=true, where a skipped root test would hide a
// regression: there it fails.
func NeedRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("this test needs root (%s), and CI=true: run the tests as root in CI", why)
	}
	t.Skip("needs root: " + why)
}
