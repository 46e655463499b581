package glibcfloor

import (
	"debug/elf"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// glibcNeed is one GLIBC_ symbol version a program asks of a glibc library
// (libc.so.6, libpthread.so.0, libdl.so.2, ...) in its .gnu.version_r
// section, with the imported symbols bound to it. The dynamic loader refuses
// to start a program when any such version is missing from the system's
// glibc ("version `GLIBC_2.34' not found"), whether or not the symbol is
// ever called.
type glibcNeed struct {
	Version string   // "GLIBC_2.34"
	Library string   // "libc.so.6"
	Symbols []string // "__libc_start_main", "pthread_create", ...
}

// String is "GLIBC_2.34 (libc.so.6: __libc_start_main, dlopen, ...)".
func (n glibcNeed) String() string {
	if len(n.Symbols) == 0 {
		return fmt.Sprintf("%s (%s, no imported symbol names it)", n.Version, n.Library)
	}
	return fmt.Sprintf("%s (%s: %s)", n.Version, n.Library, strings.Join(n.Symbols, ", "))
}

// glibcNeeds reads the GLIBC_ versions the ELF file at path needs, from its
// version-needs section (SHT_GNU_verneed), and names the dynamic symbols
// bound to each; none for a file without that section (a static program).
func glibcNeeds(path string) ([]glibcNeed, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s as ELF: %w", path, err)
	}
	defer f.Close()
	if f.Section(".gnu.version_r") == nil {
		// A static program (srunwrap) or one needing no symbol version.
		return nil, nil
	}
	needs, err := f.DynamicVersionNeeds()
	if err != nil {
		return nil, fmt.Errorf("%s: version needs (.gnu.version_r): %w", path, err)
	}
	syms, err := f.ImportedSymbols()
	if err != nil {
		return nil, fmt.Errorf("%s: imported symbols: %w", path, err)
	}
	var out []glibcNeed
	for _, lib := range needs {
		for _, dep := range lib.Needs {
			if !strings.HasPrefix(dep.Dep, "GLIBC_") {
				continue
			}
			n := glibcNeed{Version: dep.Dep, Library: lib.Name}
			for _, s := range syms {
				if s.Version == dep.Dep && s.Library == lib.Name {
					n.Symbols = append(n.Symbols, s.Name)
				}
			}
			slices.Sort(n.Symbols)
			out = append(out, n)
		}
	}
	return out, nil
}

// glibcVersion parses "GLIBC_2.28" into [2 28]; ok is false for a name that
// is no numbered release (GLIBC_PRIVATE).
func glibcVersion(name string) (v []int, ok bool) {
	rest, found := strings.CutPrefix(name, "GLIBC_")
	if !found {
		return nil, false
	}
	for _, p := range strings.Split(rest, ".") {
		n, err := strconv.Atoi(p)
		if err != nil {
			return nil, false
		}
		v = append(v, n)
	}
	return v, true
}

// above says whether the GLIBC_ version name is newer than floor (both as
// GLIBC_x.y[.z]); a version that is no numbered release counts as above.
func above(name, floor string) bool {
	v, ok := glibcVersion(name)
	if !ok {
		return true
	}
	f, _ := glibcVersion(floor)
	return slices.Compare(v, f) > 0
}

// highest returns the newest numbered version among needs ("" when none).
func highest(needs []glibcNeed) string {
	top := ""
	for _, n := range needs {
		if _, ok := glibcVersion(n.Version); !ok {
			continue
		}
		if top == "" || above(n.Version, top) {
			top = n.Version
		}
	}
	return top
}
