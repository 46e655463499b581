package main

import (
	"debug/elf"
	"fmt"
	"strconv"
	"strings"
)

// glibcVersion is a GLIBC_ symbol version, "2.34" as [2 34].
type glibcVersion []int

func parseGlibc(s string) (glibcVersion, error) {
	var v glibcVersion
	for _, part := range strings.Split(s, ".") {
		n, err := strconv.Atoi(part)
		if err != nil {
			return nil, fmt.Errorf("glibc version %q: %w", s, err)
		}
		v = append(v, n)
	}
	return v, nil
}

func (v glibcVersion) String() string {
	parts := make([]string, len(v))
	for i, n := range v {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ".")
}

// less reports whether v is an older glibc than w ("2.5" < "2.28").
func (v glibcVersion) less(w glibcVersion) bool {
	for i := 0; i < len(v) && i < len(w); i++ {
		if v[i] != w[i] {
			return v[i] < w[i]
		}
	}
	return len(v) < len(w)
}

// glibcNeed returns the highest GLIBC_x.y symbol version the ELF file at
// path needs (its .gnu.version_r entries, what `objdump -T` shows after
// each undefined symbol), and the symbol that needs it; nil for a static
// binary or one that needs no versioned glibc symbol.
func glibcNeed(path string) (glibcVersion, string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, "", fmt.Errorf("glibc floor: %w", err)
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		// No .dynsym: a static binary (srunwrap) needs no libc at all.
		return nil, "", nil
	}
	var max glibcVersion
	var why string
	for _, s := range syms {
		if s.Section != elf.SHN_UNDEF || !strings.HasPrefix(s.Version, "GLIBC_") {
			continue
		}
		v, err := parseGlibc(strings.TrimPrefix(s.Version, "GLIBC_"))
		if err != nil {
			// GLIBC_PRIVATE and the like: not a release.
			continue
		}
		if max == nil || max.less(v) {
			max, why = v, s.Name+"@"+s.Version
		}
	}
	return max, why, nil
}

// glibcFloor is the highest glibcNeed over paths, and which file and symbol
// set it ("gpuprep-prolog: __libc_start_main@GLIBC_2.34").
func glibcFloor(paths []string) (glibcVersion, string, error) {
	var max glibcVersion
	var why string
	for _, p := range paths {
		v, sym, err := glibcNeed(p)
		if err != nil {
			return nil, "", err
		}
		if v != nil && (max == nil || max.less(v)) {
			max, why = v, p+": "+sym
		}
	}
	return max, why, nil
}
