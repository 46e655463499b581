// Package knobsnap snapshots every file of a fixture root that gpuprep's
// knobs write (cpufreq, cpuidle, THP, vm and kernel sysctls, and the mock
// GPUs' saved settings), so tests can say "the node is back at its
// baseline" exactly.
package knobsnap

import (
	"encoding/json"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"gpuprep/lib/knob"
)

// Snapshot maps keys to contents, white space trimmed. A key is a
// root-relative path ("proc/sys/vm/swappiness"), or for a field of a mock
// GPU's saved settings the file's path, '#' and the field
// ("run/gpuprep-mock/GPU-....json#power_mw").
type Snapshot map[string]string

// mockDir holds the mock GPUs' saved settings, one <uuid>.json per GPU
// (internal/gpumock/persist.go).
const mockDir = "run/gpuprep-mock/"

// tunedSeen remembers tuned's answer per root-relative path. Take asks
// it for every file under the folders it walks (some 20,000 on the DGX
// H100 fixture), and matching each against every knob's Writes patterns
// made a snapshot take 0.3-0.5 s instead of 0.12 s (the crash tests take
// one after every kill); the answer depends on the path alone.
var tunedSeen sync.Map // string -> bool

// tuned says whether a root-relative path is a file some knob writes, or
// may write beside one (all of THP's and vm's files).
func tuned(rel string) bool {
	if v, ok := tunedSeen.Load(rel); ok {
		return v.(bool)
	}
	v := tunedPath(rel)
	tunedSeen.Store(rel, v)
	return v
}

// tunedPath is tuned, not remembered.
func tunedPath(rel string) bool {
	switch {
	case KnobOf(rel) != "",
		strings.HasPrefix(rel, "sys/kernel/mm/transparent_hugepage/"),
		strings.HasPrefix(rel, "proc/sys/vm/"),
		isMockFile(rel):
		return true
	}
	return false
}

// isMockFile says whether rel is a mock GPU's saved settings.
func isMockFile(rel string) bool {
	name, ok := strings.CutPrefix(rel, mockDir)
	return ok && !strings.Contains(name, "/") && strings.HasSuffix(name, ".json")
}

// isNum says whether s is a non-empty run of decimal digits.
func isNum(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// matchWrite says whether rel is the file pattern (a knob.Def's Writes
// entry) names: the same components, "<N>" in one standing for a run of
// decimal digits, a whole "<*>" for any one name (a cgroup's).
func matchWrite(pattern, rel string) bool {
	ps, rs := strings.Split(pattern, "/"), strings.Split(rel, "/")
	if len(ps) != len(rs) {
		return false
	}
	for i, p := range ps {
		if p == "<*>" {
			continue
		}
		pre, suf, ok := strings.Cut(p, "<N>")
		if !ok {
			if p != rs[i] {
				return false
			}
			continue
		}
		n, ok := strings.CutPrefix(rs[i], pre)
		if n, ok = strings.CutSuffix(n, suf); !ok || !isNum(n) {
			return false
		}
	}
	return true
}

// mockFieldKnobs are the GPU knobs of the mock's saved fields
// (ecc_pending belongs to none).
var mockFieldKnobs = map[string]string{
	"persistence":    "gpu_persistence",
	"compute_mode":   "gpu_compute_mode",
	"app_sm_mhz":     "gpu_app_clocks_mhz",
	"app_mem_mhz":    "gpu_app_clocks_mhz",
	"locked_min_mhz": "gpu_locked_clocks_mhz",
	"locked_max_mhz": "gpu_locked_clocks_mhz",
	"power_mw":       "gpu_power_limit_w",
	"accounting":     "gpu_accounting",
}

// KnobOf names the knob (lib/knob's configuration key) that writes the file
// (as its knob.Def's Writes says) or mock GPU field of a snapshot key: cpu_governor for
// sys/devices/system/cpu/cpufreq/policy3/scaling_governor,
// gpu_power_limit_w for run/gpuprep-mock/<uuid>.json#power_mw; "" for a key
// no knob writes.
func KnobOf(key string) string {
	if file, field, ok := strings.Cut(key, "#"); ok {
		if !isMockFile(file) {
			return ""
		}
		return mockFieldKnobs[field]
	}
	for _, d := range knob.Defs() {
		for _, w := range d.Writes {
			if matchWrite(w, key) {
				return d.Name
			}
		}
	}
	return ""
}

// walkTops are the folders Take walks: those of the THP and sysctl files
// and the mock GPUs, and the folder of each knob's written files (up to
// its first "<N>" or "<*>"), where no other holds it.
func walkTops() []string {
	tops := []string{"sys/devices/system/cpu", "sys/kernel/mm", "proc/sys", "run"}
	for _, d := range knob.Defs() {
		for _, w := range d.Writes {
			dir := path.Dir(w)
			if i := strings.Index(dir, "<"); i >= 0 {
				dir = path.Dir(dir[:i])
			}
			if !slices.ContainsFunc(tops, func(t string) bool { return dir == t || strings.HasPrefix(dir, t+"/") }) {
				tops = append(tops, dir)
			}
		}
	}
	return tops
}

// Take reads every tuned file under root. Symlinks are not followed, so a
// file reached by several paths (cpu<N>/cpufreq -> ../cpufreq/policy<N>)
// is taken once, under its real path. Names starting with '.' (temporary
// files of an atomic write) are left out. A mock GPU's saved settings
// become one key per field (file#field), or the file's own key when they
// are not a JSON object.
func Take(root string) (Snapshot, error) {
	s := Snapshot{}
	for _, top := range walkTops() {
		err := filepath.WalkDir(filepath.Join(root, top), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) {
					return nil
				}
				return err
			}
			if d.Type()&fs.ModeSymlink != 0 || d.IsDir() || strings.HasPrefix(d.Name(), ".") {
				return nil
			}
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			if !tuned(rel) {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if isMockFile(rel) {
				var fields map[string]json.RawMessage
				if json.Unmarshal(b, &fields) == nil && fields != nil {
					for f, v := range fields {
						s[rel+"#"+f] = strings.TrimSpace(string(v))
					}
					return nil
				}
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

// Diff lists the differences from want, sorted, at most max of them:
// "<key>: <want> -> <got>", "<key>: missing" or "<key>: new file" (keys
// under run/ that want lacks are not listed: the mock GPUs save their
// settings on their first change).
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
