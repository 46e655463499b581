// Package knobsnap snapshots every file of a fixture root that gpuprep's
// knobs write (cpufreq, cpuidle, THP, vm and kernel sysctls, and the mock
// GPUs' saved settings), so tests can say "the node is back at its
// baseline" exactly.
package knobsnap

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Snapshot maps root-relative paths to contents.
type Snapshot map[string]string

// tuned says whether a root-relative path is a file some knob writes.
func tuned(rel string) bool {
	switch {
	case strings.HasSuffix(rel, "/cpufreq/scaling_governor"),
		strings.HasSuffix(rel, "/cpufreq/energy_performance_preference"),
		strings.Contains(rel, "/cpuidle/state") && strings.HasSuffix(rel, "/disable"),
		strings.HasPrefix(rel, "sys/kernel/mm/transparent_hugepage/"),
		strings.HasPrefix(rel, "proc/sys/vm/"),
		rel == "proc/sys/kernel/numa_balancing",
		strings.HasPrefix(rel, "run/gpuprep-mock/") && strings.HasSuffix(rel, ".json"):
		return true
	}
	return false
}

// Take reads every tuned file under root.
func Take(root string) (Snapshot, error) {
	s := Snapshot{}
	for _, top := range []string{"sys/devices/system/cpu", "sys/kernel/mm", "proc/sys", "run"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) {
					return nil
				}
				return err
			}
			if d.Type()&fs.ModeSymlink != 0 || d.IsDir() {
				return nil
			}
			rel, _ := filepath.Rel(root, p)
			if !tuned(rel) {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			// A kernel file reads back with its newline whatever was
			// written; a fixture file keeps what was written.
			s[rel] = strings.TrimSpace(string(b))
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Diff lists the differences from want, sorted, at most max of them.
func (s Snapshot) Diff(want Snapshot, max int) []string {
	var out []string
	for k, v := range want {
		if got, ok := s[k]; !ok {
			out = append(out, k+": missing")
		} else if got != v {
			out = append(out, k+": "+strings.TrimSpace(v)+" -> "+strings.TrimSpace(got))
		}
	}
	for k := range s {
		if _, ok := want[k]; !ok && !strings.HasPrefix(k, "run/") {
			out = append(out, k+": new file")
		}
	}
	sort.Strings(out)
	if len(out) > max {
		out = append(out[:max], "...")
	}
	return out
}
