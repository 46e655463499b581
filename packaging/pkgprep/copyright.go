package main

import (
	"debug/buildinfo"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// module is a Go module compiled into some of the packaged programs.
type module struct {
	Path, Version string
	Dir           string   // its source in the module cache
	Programs      []string // which programs it is compiled into
}

// modulesOf reads the modules compiled into each binary (what `go version
// -m` prints: its dependencies, a replacement in place of what it replaces)
// and where their source is in modcache. It also returns the Go version
// the binaries were built with (their runtime and standard library).
func modulesOf(binaries []string, modcache string) ([]*module, string, error) {
	byPath := map[string]*module{}
	goVersion := ""
	for _, bin := range binaries {
		bi, err := buildinfo.ReadFile(bin)
		if err != nil {
			return nil, "", fmt.Errorf("modules of %s: %w", bin, err)
		}
		goVersion = bi.GoVersion
		for _, d := range bi.Deps {
			if d.Replace != nil {
				d = d.Replace
			}
			key := d.Path + "@" + d.Version
			m := byPath[key]
			if m == nil {
				dir, err := moduleDir(modcache, d.Path, d.Version)
				if err != nil {
					return nil, "", err
				}
				m = &module{Path: d.Path, Version: d.Version, Dir: dir}
				byPath[key] = m
			}
			m.Programs = append(m.Programs, filepath.Base(bin))
		}
	}
	mods := make([]*module, 0, len(byPath))
	for _, m := range byPath {
		mods = append(mods, m)
	}
	sort.Slice(mods, func(i, j int) bool { return mods[i].Path < mods[j].Path })
	return mods, goVersion, nil
}

// moduleDir is where the module cache keeps path@version: upper-case
// letters are escaped as "!" and the lower-case letter
// (golang.org/x/mod/module.EscapePath).
func moduleDir(modcache, path, version string) (string, error) {
	var b strings.Builder
	for _, r := range path {
		if 'A' <= r && r <= 'Z' {
			b.WriteByte('!')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	dir := filepath.Join(modcache, b.String()+"@"+version)
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("module %s@%s is not in the module cache (go mod download fetches it): %w", path, version, err)
	}
	return dir, nil
}

// dep5 indents text as the continuation lines of a DEP-5 field: one space
// before each line, " ." for an empty one.
func dep5(text string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(strings.ReplaceAll(text, "\r", ""), "\n"), "\n") {
		l = strings.TrimRight(strings.ReplaceAll(l, "\t", "    "), " ")
		if l == "" {
			b.WriteString(" .\n")
		} else {
			b.WriteString(" " + l + "\n")
		}
	}
	return b.String()
}

// copyrightFile writes the machine-readable copyright file (DEP-5,
// https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/) for
// gpuprep and every module compiled into its programs, and the Go standard
// library and runtime from goroot. apacheText is where the installed system
// has the Apache-2.0 text (Debian: /usr/share/common-licenses/Apache-2.0).
func copyrightFile(mods []*module, goVersion, goroot, apacheText string) (string, error) {
	var b strings.Builder
	b.WriteString("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n")
	b.WriteString("Upstream-Name: gpuprep\n")
	b.WriteString("Comment: The programs are Go binaries: they contain the Go modules listed\n")
	b.WriteString(" below (paths as `go mod vendor` would lay them out) and the Go standard\n")
	b.WriteString(" library and runtime, each under its own licence.\n\n")
	b.WriteString("Files: *\nCopyright: 2026 The gpuprep Authors\nLicense: Apache-2.0\n")

	// The Go standard library and runtime, in every program.
	name, text, err := licenseFile(goroot)
	if err != nil {
		return "", err
	}
	if lic := classify(text); lic != "BSD-3-clause" {
		return "", fmt.Errorf("Go's %s: expected BSD-3-clause, found %q", filepath.Join(goroot, name), lic)
	}
	fmt.Fprintf(&b, "\nFiles: vendor/std/*\nCopyright: %s\n", strings.Join(orUnknown(copyrightHolders(text)), "\n "))
	fmt.Fprintf(&b, "Comment: the Go standard library and runtime (%s), in every program\n", goVersion)
	fmt.Fprintf(&b, "License: BSD-3-clause\n%s", dep5(text))

	for _, m := range mods {
		name, text, err := licenseFile(m.Dir)
		if err != nil {
			return "", err
		}
		lic := classify(text)
		if lic == "" {
			return "", fmt.Errorf("module %s@%s: the licence in %s is none this tool knows (Apache-2.0, MPL-2.0, Expat, BSD, ISC): review it and teach packaging/pkgprep/license.go", m.Path, m.Version, name)
		}
		holders := copyrightHolders(text)
		notice := ""
		if nb, err := os.ReadFile(filepath.Join(m.Dir, "NOTICE")); err == nil {
			notice = string(nb)
			holders = append(holders, copyrightHolders(notice)...)
		}
		fmt.Fprintf(&b, "\nFiles: vendor/%s/*\nCopyright: %s\n", m.Path, strings.Join(orUnknown(dedup(holders)), "\n "))
		fmt.Fprintf(&b, "Comment: Go module %s %s, in %s.\n", m.Path, m.Version, strings.Join(m.Programs, ", "))
		if notice != "" {
			fmt.Fprintf(&b, " Its NOTICE file:\n .\n%s", dep5(notice))
		}
		if lic == "Apache-2.0" || lic == "MPL-2.0" {
			// The licence text itself is the same for every module: one
			// stand-alone paragraph below.
			fmt.Fprintf(&b, "License: %s\n", lic)
			continue
		}
		// BSD, Expat, ISC: the text names the holders, so it goes in whole.
		fmt.Fprintf(&b, "License: %s\n%s", lic, dep5(text))
	}

	fmt.Fprintf(&b, "\nLicense: Apache-2.0\n")
	fmt.Fprintf(&b, " Licensed under the Apache License, Version 2.0 (the \"License\");\n")
	fmt.Fprintf(&b, " you may not use this file except in compliance with the License.\n")
	fmt.Fprintf(&b, " You may obtain a copy of the License at\n .\n     https://www.apache.org/licenses/LICENSE-2.0\n .\n")
	fmt.Fprintf(&b, " Unless required by applicable law or agreed to in writing, software\n")
	fmt.Fprintf(&b, " distributed under the License is distributed on an \"AS IS\" BASIS,\n")
	fmt.Fprintf(&b, " WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.\n")
	fmt.Fprintf(&b, " See the License for the specific language governing permissions and\n")
	fmt.Fprintf(&b, " limitations under the License.\n .\n")
	fmt.Fprintf(&b, " The complete text of the Apache License, Version 2.0 is in\n %s.\n", apacheText)
	for _, m := range mods {
		if _, text, _ := licenseFile(m.Dir); classify(text) == "MPL-2.0" {
			fmt.Fprintf(&b, "\nLicense: MPL-2.0\n The complete text of the Mozilla Public License 2.0 is in\n /usr/share/common-licenses/MPL-2.0 on Debian, and at\n https://mozilla.org/MPL/2.0/.\n")
			break
		}
	}
	return b.String(), nil
}

func orUnknown(holders []string) []string {
	if len(holders) == 0 {
		return []string{"the module's authors (its licence file names no holder)"}
	}
	return holders
}

func dedup(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
