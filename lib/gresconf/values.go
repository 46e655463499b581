package gresconf

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/slurm"
)

// MaxFilesPerLine bounds File=/MultipleFiles= expansion on one line; Slurm
// limits a node's count of GRES with files to 1024.
const MaxFilesPerLine = 1024

// MaxLink is the largest Links= value Slurm accepts (GRES_MAX_LINK).
const MaxLink = 1023

// autoDetectModes are the AutoDetect= values Slurm knows (22.05: off, nvml,
// rsmi, oneapi; later: nrt, nvidia).
var autoDetectModes = []string{"off", "nvml", "rsmi", "oneapi", "nrt", "nvidia"}

// parseAutoDetect reads AutoDetect=, case-insensitive, into lower case.
// Slurm 22.05 matches "nvml", "rsmi" and "oneapi" as substrings and logs
// (but ignores) anything else; this parser wants one known word.
func parseAutoDetect(v string) (string, string) {
	lv := strings.ToLower(v)
	for _, m := range autoDetectModes {
		if lv == m {
			return m, ""
		}
	}
	return "", fmt.Sprintf("AutoDetect= value %s: not one of %s", slurm.Quote(v), strings.Join(autoDetectModes, ", "))
}

// parseCores reads Cores=: a CPU list of Slurm abstract core ids ("0-27",
// "0,2-3"). Slurm's bit_unfmt also takes a step form ("0-30:2") and skips
// stray bytes; this parser wants a plain list.
func parseCores(v string) (cpuset.Set, error) {
	if strings.TrimSpace(v) == "" {
		return cpuset.Set{}, errors.New("empty core list")
	}
	return cpuset.Parse(v)
}

// parseFiles expands File= or MultipleFiles=: comma lists and bracket
// ranges, as Slurm's hostlist_create does ("/dev/nvidia[0-3]",
// "/dev/nvidia0,/dev/nvidia-caps/nvidia-cap[21-22]"). Every path must be
// absolute: slurmd stats each one and dies when it is missing.
func parseFiles(v string) ([]string, error) {
	h, err := slurm.ParseHostlist(v)
	if err != nil {
		return nil, err
	}
	n := h.Len()
	if n == 0 {
		return nil, errors.New("no file names")
	}
	if n > MaxFilesPerLine {
		return nil, fmt.Errorf("more than %d files", MaxFilesPerLine)
	}
	files := h.Expand()
	for _, f := range files {
		if !strings.HasPrefix(f, "/") {
			return nil, fmt.Errorf("%s is not an absolute path", slurm.Quote(f))
		}
	}
	return files, nil
}

// gresFlags are the Flags= words Slurm 22.05 knows, by lower-case name.
var gresFlags = map[string]bool{
	"countonly": true, "nvidia_gpu_env": true, "amd_gpu_env": true,
	"intel_gpu_env": true, "opencl_env": true, "no_gpu_env": true,
	"one_sharing": true, "all_sharing": true,
}

var envFlags = []string{"nvidia_gpu_env", "amd_gpu_env", "intel_gpu_env", "opencl_env"}

// parseFlags reads Flags=: comma-separated words, case-insensitive. Slurm
// looks for each known word as a substring and ignores the rest, so an
// unknown word is only a warning. no_gpu_env with another *_env flag, and
// one_sharing with all_sharing, are errors as in Slurm.
func parseFlags(v string) (flags []string, warns []string, err string) {
	has := map[string]bool{}
	for _, f := range strings.Split(v, ",") {
		if f == "" {
			continue
		}
		lf := strings.ToLower(f)
		if !gresFlags[lf] {
			warns = append(warns, fmt.Sprintf("unknown flag %s, ignored by Slurm", slurm.Quote(f)))
		}
		has[lf] = true
		flags = append(flags, f)
	}
	if has["no_gpu_env"] {
		for _, e := range envFlags {
			if has[e] {
				return nil, nil, "no_gpu_env excludes " + e
			}
		}
	}
	if has["one_sharing"] && has["all_sharing"] {
		return nil, nil, "one_sharing and all_sharing exclude each other"
	}
	return flags, warns, ""
}

// parseLinks reads Links=: a comma list of link counts, 0..1023, with
// exactly one -1 marking the device itself. Slurm 22.05 logs an invalid
// Links= and drops it; this parser calls it an error so that a check sees it.
func parseLinks(v string) ([]int, string) {
	parts := strings.Split(v, ",")
	out := make([]int, 0, len(parts))
	self := -1
	for i, t := range parts {
		if t == "" {
			return nil, fmt.Sprintf("empty element %d", i+1)
		}
		n, err := strconv.Atoi(t)
		if err != nil {
			return nil, "not a number"
		}
		if n < -1 || n > MaxLink {
			return nil, fmt.Sprintf("%d is out of range (-1 to %d)", n, MaxLink)
		}
		if n == -1 {
			if self >= 0 {
				return nil, "more than one -1"
			}
			self = i
		}
		out = append(out, n)
	}
	if self < 0 {
		return nil, "no -1 marks the device itself"
	}
	return out, ""
}

// countSuffixes are Slurm's suffix_mult: K/KiB=1024, KB=1000, up to P.
var countSuffixes = map[string]uint64{
	"":  1,
	"k": 1 << 10, "kib": 1 << 10, "kb": 1e3,
	"m": 1 << 20, "mib": 1 << 20, "mb": 1e6,
	"g": 1 << 30, "gib": 1 << 30, "gb": 1e9,
	"t": 1 << 40, "tib": 1 << 40, "tb": 1e12,
	"p": 1 << 50, "pib": 1 << 50, "pb": 1e15,
}

// parseCount reads Count=: a decimal number with an optional suffix, case-
// insensitive (K/KiB = 1024, KB = 1000, M, G, T, P likewise), below
// NO_VAL64. Slurm reads it with strtoll, so a sign or a missing number slip
// through there; here they are errors.
func parseCount(v string) (uint64, string) {
	i := 0
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, "not a number"
	}
	n, err := strconv.ParseUint(v[:i], 10, 64)
	if err != nil {
		return 0, "too large"
	}
	mult, ok := countSuffixes[strings.ToLower(v[i:])]
	if !ok {
		return 0, fmt.Sprintf("unknown suffix %s (K, M, G, T, P)", slurm.Quote(v[i:]))
	}
	hi, lo := bits.Mul64(n, mult)
	if hi != 0 || lo >= 1<<64-2 {
		return 0, "too large"
	}
	return lo, ""
}
