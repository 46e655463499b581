package pkgtest

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// leftovers is what leaveGpuprepFiles made beside gpuprep's own files: the
// files of others, which a purge must keep.
type leftovers struct{ others []string }

// leaveGpuprepFiles writes in root what a node running gpuprep has beyond
// the package's files: the spool, the log and its rotations, the run
// directory and node_exporter's textfile metrics; with files of others
// beside them.
func leaveGpuprepFiles(t *testing.T, root string) leftovers {
	t.Helper()
	files := map[string]string{
		"var/lib/gpuprep/format":                               "1\n",
		"var/lib/gpuprep/node.json":                            "{}\n",
		"var/lib/gpuprep/jobs/7-20261206T000000Z.json":         "{}\n",
		"var/log/gpuprep.log":                                  "level=INFO\n",
		"var/log/gpuprep.log.1.gz":                             "",
		"run/gpuprep/format":                                   "1\n",
		"run/gpuprep/jobs/7/notices":                           "",
		"var/lib/prometheus/node-exporter/gpuprep-prolog.prom": "gpuprep_last_run_success 1\n",
		"var/lib/prometheus/node-exporter/gpuprep-health.prom": "gpuprep_health_up 1\n",
		// Not gpuprep's: they stay.
		"var/lib/prometheus/node-exporter/smartmon.prom": "smartmon_up 1\n",
		"var/log/other.log": "x\n",
	}
	var l leftovers
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(name, "gpuprep") {
			l.others = append(l.others, name)
		}
	}
	return l
}

// gpuprepFiles lists what in root still names gpuprep (dpkg's own records
// included), leaving out /tmp, where the tests put the package.
func gpuprepFiles(t *testing.T, root string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "tmp" || rel == "proc" || rel == "sys" || rel == "dev" {
			return filepath.SkipDir
		}
		if strings.Contains(d.Name(), "gpuprep") {
			found = append(found, "/"+rel)
			if d.IsDir() {
				return filepath.SkipDir
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}
