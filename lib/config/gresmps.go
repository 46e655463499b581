package config

import (
	"fmt"
	"strconv"
	"strings"
)

// GPUSelection is a set of GPUs chosen the way [mig.layout]'s selectors
// choose them: "all", "none", a GPU model as NVML names it ("NVIDIA H200"),
// a GPU type as gres.conf names it ("h200"), or a list of GPU indexes,
// models and types ([0, 2], ["h100", 7]). It is kept as the strings
// written (an index as its decimal digits); [] is "none".
type GPUSelection []string

// The whole-node GPU selections.
const (
	SelectAll  = "all"
	SelectNone = "none"
)

// UnmarshalTOML takes a string or a list of GPU indexes and strings.
func (s *GPUSelection) UnmarshalTOML(v any) error {
	const want = `must be "all", "none", a GPU model or type, or a list of GPU indexes, models and types`
	switch v := v.(type) {
	case string:
		*s = GPUSelection{v}
		return nil
	case []any:
		out := GPUSelection{}
		for _, e := range v {
			switch e := e.(type) {
			case int64:
				if e < 0 || e > maxMIGIndex {
					return fmt.Errorf("GPU index %d: must be 0..%d", e, maxMIGIndex)
				}
				out = append(out, strconv.FormatInt(e, 10))
			case string:
				out = append(out, e)
			default:
				return fmt.Errorf("%s", want)
			}
		}
		*s = out
		return nil
	}
	return fmt.Errorf("%s", want)
}

// None says whether the selection chooses no GPU at all.
func (s GPUSelection) None() bool {
	return len(s) == 0 || len(s) == 1 && strings.EqualFold(s[0], SelectNone)
}

// Matches says whether g is selected: by its index, its model or its type
// (both case-insensitive), or by "all".
func (s GPUSelection) Matches(g MIGGPU) bool {
	for _, sel := range s {
		switch {
		case strings.EqualFold(sel, SelectAll):
			return true
		case sel == strconv.Itoa(g.Index):
			return true
		case g.Model != "" && strings.EqualFold(sel, g.Model), g.Type != "" && strings.EqualFold(sel, g.Type):
			return true
		}
	}
	return false
}

// String is the selection as written in TOML.
func (s GPUSelection) String() string {
	if len(s) == 1 {
		if _, err := strconv.Atoi(s[0]); err != nil {
			return strconv.Quote(s[0])
		}
	}
	parts := make([]string, len(s))
	for i, e := range s {
		if _, err := strconv.Atoi(e); err == nil {
			parts[i] = e
		} else {
			parts[i] = strconv.Quote(e)
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// DefaultMPSCount is gres.mps_count's built-in value: each marked GPU
// offers 100 gres/mps, so that a job's share reads as a percentage
// (Slurm sets CUDA_MPS_ACTIVE_THREAD_PERCENTAGE from it).
const DefaultMPSCount = 100

// maxMPSCount bounds gres.mps_count: Slurm's Count is 64-bit, but a share
// finer than a millionth of a GPU means nothing to MPS.
const maxMPSCount = 1_000_000

// checkGresMPS checks gres.mps_gpus and gres.mps_count: the selectors are
// GPU indexes, models, types, "all" or "none" ("all" and "none" alone), none
// given twice; the count is 1..1000000.
func checkGresMPS(g *GresSection, ps *problems) {
	key := []string{"gres", "mps_gpus"}
	seen := map[string]bool{}
	for _, sel := range g.MPSGPUs {
		lower := strings.ToLower(sel)
		switch {
		case (lower == SelectAll || lower == SelectNone) && len(g.MPSGPUs) > 1:
			ps.add(key, "%s = %s: %q stands alone, not in a list", formatKey(key), g.MPSGPUs, sel)
		case !migSelectorRE.MatchString(sel):
			ps.add(key, "%s = %s: %q is not a GPU index, a GPU model, a GPU type, \"all\" or \"none\"", formatKey(key), g.MPSGPUs, sel)
		case seen[lower]:
			ps.add(key, "%s = %s: %q is given twice", formatKey(key), g.MPSGPUs, sel)
		}
		seen[lower] = true
	}
	ck := []string{"gres", "mps_count"}
	if g.MPSCount < 1 || g.MPSCount > maxMPSCount {
		ps.add(ck, "%s = %d: must be 1..%d (each marked GPU's gres/mps Count; %d reads as percent)", formatKey(ck), g.MPSCount, maxMPSCount, DefaultMPSCount)
	}
}
