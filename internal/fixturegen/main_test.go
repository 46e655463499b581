package fixturegen

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"gpuprep/internal/nodeshape"
)

// Writing a root creates tens of thousands of files; tests that only read a
// root share one per shape, written on first use and removed at exit.
var shared struct {
	sync.Mutex
	dir   string
	roots map[string]string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// sharedRoot is the root of shape name, written once per test binary. Tests
// must not change it.
func sharedRoot(t *testing.T, name string) string {
	t.Helper()
	shared.Lock()
	defer shared.Unlock()
	if dir, ok := shared.roots[name]; ok {
		return dir
	}
	s, ok := nodeshape.ByName(name)
	if !ok {
		t.Fatalf("no shape %s", name)
	}
	if shared.dir == "" {
		d, err := os.MkdirTemp("", "fixturegen-test-")
		if err != nil {
			t.Fatal(err)
		}
		shared.dir, shared.roots = d, map[string]string{}
	}
	dir := filepath.Join(shared.dir, name)
	if err := Write(s, dir); err != nil {
		t.Fatal(fmt.Errorf("write %s: %w", name, err))
	}
	shared.roots[name] = dir
	return dir
}
