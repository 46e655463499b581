package gresgen

import "strings"

// SlurmType is the GPU type Slurm's NVML autodetection gives a GPU: the NVML
// product name in lower case with spaces replaced by underscores
// ("NVIDIA H100 80GB HBM3" -> "nvidia_h100_80gb_hbm3"), so a generated
// gres.conf agrees with AutoDetect=nvml by default.
func SlurmType(productName string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(productName)), " ", "_")
}

// MIGType is Slurm's autodetected type of a MIG device: the parent's type,
// "_", the profile ("nvidia_a100-sxm4-40gb_3g.20gb").
func MIGType(parentType, profile string) string {
	return parentType + "_" + profile
}

// TypeFor applies the site's short names: a TypeNames entry (matched ignoring
// case) for the Slurm type or for the product name wins; otherwise the Slurm
// type stays.
func TypeFor(productName string, names map[string]string) string {
	st := SlurmType(productName)
	if short, ok := lookupFold(names, st); ok {
		return short
	}
	if short, ok := lookupFold(names, strings.TrimSpace(productName)); ok {
		return short
	}
	return st
}

func lookupFold(names map[string]string, key string) (string, bool) {
	if v, ok := names[key]; ok {
		return v, true
	}
	for k, v := range names {
		if strings.EqualFold(k, key) {
			return v, true
		}
	}
	return "", false
}
