// Package probetools runs the third-party GPU and network tests that
// gpuprep-health --probe uses when they are installed, never requiring
// them: DCGM's diagnostic (dcgmi diag), nccl-tests' all_reduce_perf across
// the node's GPUs, and perftest's ib_write_bw in loopback on each HCA.
// Find looks for them on a PATH, Run runs them and reads their output into
// Results, and Judge turns the Results into probe.Findings for the probe
// verdict, with the tool's name and version.
//
// Every tool runs by argv (never a shell), with stdin /dev/null, its
// output capped, a timeout, and its whole process group ended when the
// timeout passes.
package probetools

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// The tools' names, as found on PATH and as Result.Tool.
const (
	DCGMI         = "dcgmi"
	AllReducePerf = "all_reduce_perf"
	IBWriteBW     = "ib_write_bw"
)

// Names are the tools Find looks for, in the order Run runs them.
var Names = []string{DCGMI, AllReducePerf, IBWriteBW}

// versionTimeout bounds each version query.
var versionTimeout = 10 * time.Second

// Tool is an installed tool: its name (one of Names), the path it was
// found at, and its version ("" when it does not say).
type Tool struct {
	Name    string `json:"name"`
	Path    string `json:"path"`
	Version string `json:"version,omitempty"`
}

// Find looks for each of Names in the directories of path (a PATH-like,
// colon-separated list; relative and empty entries are skipped, as a
// daemon must not run what its working directory holds) and returns those
// found, first directory first, with their versions. Only regular
// executable files count; a symlink counts when it leads to one.
func Find(path string) []Tool {
	dirs := searchDirs(path)
	var out []Tool
	for _, name := range Names {
		for _, d := range dirs {
			p := filepath.Join(d, name)
			if !isExecutable(p) {
				continue
			}
			out = append(out, Tool{Name: name, Path: p, Version: version(name, p)})
			break
		}
	}
	return out
}

// searchDirs is path's absolute directories, each once, in order.
func searchDirs(path string) []string {
	seen := map[string]bool{}
	var out []string
	for _, d := range filepath.SplitList(path) {
		d = filepath.Clean(d)
		if d == "" || !filepath.IsAbs(d) || seen[d] {
			continue
		}
		seen[d] = true
		out = append(out, d)
	}
	return out
}

// isExecutable says whether p is (or links to) a regular file with an
// execute bit.
func isExecutable(p string) bool {
	fi, err := os.Stat(p) // follows symlinks
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// versionRE reads "version: X" (TCLAP's --version, perftest's
// "Version: 6.10") and "Version : X" (dcgmi -v's build info).
var versionRE = regexp.MustCompile(`(?i)\bversion\s*:\s*v?([0-9][0-9A-Za-z.+~-]*)`)

// version asks the tool at p its version: `dcgmi --version`, else
// `dcgmi -v`; `ib_write_bw --version`. all_reduce_perf has no version
// flag: it prints its version in the header of a run (see Run), so "".
// The exit status is not looked at (ib_write_bw --version exits 1).
func version(name, p string) string {
	var tries [][]string
	switch name {
	case DCGMI:
		tries = [][]string{{"--version"}, {"-v"}}
	case IBWriteBW:
		tries = [][]string{{"--version"}}
	}
	for _, args := range tries {
		o := runTool(context.Background(), versionTimeout, p, args...)
		if m := versionRE.FindStringSubmatch(o.Stdout + "\n" + o.Stderr); m != nil {
			return m[1]
		}
	}
	return ""
}
