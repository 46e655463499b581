package gpu

import (
	"fmt"
	"strings"

	"gpuprep/lib/textfmt"
)

// procDriverVersion is the driver's version banner.
const procDriverVersion = "/proc/driver/nvidia/version"

var _ DriverReader = (*Procfs)(nil)

// DriverVersion reads the version from /proc/driver/nvidia/version:
// "NVRM version: NVIDIA UNIX ... Kernel Module for x86_64  550.54.15  Release Build ...".
func (p *Procfs) DriverVersion() (string, error) {
	b, err := p.root.ReadFile(procDriverVersion)
	if err != nil {
		return "", fmt.Errorf("procfs: %w", err)
	}
	return ParseDriverVersion(procDriverVersion, string(b))
}

// ParseDriverVersion takes the version from the first line of
// /proc/driver/nvidia/version: the first field after "NVRM version:" that
// looks like a version (digits and dots, with at least one dot). name is the
// file for errors.
func ParseDriverVersion(name, text string) (string, error) {
	line, _, _ := strings.Cut(text, "\n")
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), "NVRM version:")
	if !ok {
		return "", fmt.Errorf("%s: first line does not start with \"NVRM version:\": %q", name, textfmt.Clip(line, 60))
	}
	for _, f := range strings.Fields(rest) {
		if isVersion(f) {
			return f, nil
		}
	}
	return "", fmt.Errorf("%s: no version number in %q", name, textfmt.Clip(line, 60))
}

func isVersion(s string) bool {
	if !strings.Contains(s, ".") || strings.HasPrefix(s, ".") || strings.HasSuffix(s, ".") {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && c != '.' {
			return false
		}
	}
	return true
}
