package testroot

import (
	"os"
	"path/filepath"
	"testing"
)

// Files writes a small fixture root: each node path (a key, "/etc/slurm/
// slurm.conf") with its content, under a new temporary folder, which it
// returns.
func Files(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, body := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
