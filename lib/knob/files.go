package knob

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"

	"gpuprep/lib/textfmt"
)

// files is the part of host.Root the knobs use. Every knob reads and writes
// through a host.Root; tests wrap one to play a kernel that keeps another
// value than the one written.
type files interface {
	ReadString(p string) (string, error)
	WriteFile(p, value string) (string, error)
	ReadDir(p string) ([]string, error)
}

// cpuDir is the sysfs folder of the CPUs.
const cpuDir = "/sys/devices/system/cpu"

// cpuFile is the node path of a file under one CPU's folder:
// cpuFile(3, "cpufreq/scaling_governor").
func cpuFile(cpu int, rel string) string {
	return cpuDir + "/cpu" + strconv.Itoa(cpu) + "/" + rel
}

// unsupported is the error of a knob whose file is absent.
func unsupported(id ID, path string) error {
	return fmt.Errorf("%s: %s is absent: %w", id, path, ErrUnsupported)
}

// notExist reports whether err says a file does not exist.
func notExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// garbage is the error for a kernel file whose content is not what the
// kernel writes there.
func garbage(path, content, want string) error {
	return fmt.Errorf("%s: unexpected content %q (want %s)", path, clip(content), want)
}

// isWord reports whether s is a single kernel keyword: letters, digits,
// '_', '-', '+' and '.' ("performance", "balance_performance",
// "defer+madvise"). It keeps ';', '=', ',' and white space (the per-CPU
// value's separators) and control bytes out of values.
func isWord(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '_' || c == '-' || c == '+' || c == '.':
		default:
			return false
		}
	}
	return true
}

// clip shortens a string for an error message: textfmt.Clip at 60 bytes,
// the limit of every knob message.
func clip(s string) string { return textfmt.Clip(s, 60) }
