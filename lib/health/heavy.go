package health

import (
	"path/filepath"
	"slices"
	"strings"
)

// HeavyDiag says whether argv is a DCGM diagnostic above level 1
// (`dcgmi diag -r 2`, `--run 3`, `-r memory`, ...): minutes of load on every
// GPU, which gpuprep-health never runs (slurmd gives it 60 s, and the node
// may be running jobs); level 1 (`-r 1`, `--run quick`) takes seconds. The
// reason names what was found; "" when it is not heavy.
func HeavyDiag(argv []string) string {
	if len(argv) == 0 || filepath.Base(argv[0]) != "dcgmi" || !slices.Contains(argv, "diag") {
		return ""
	}
	for i, a := range argv {
		var level string
		switch {
		case (a == "-r" || a == "--run") && i+1 < len(argv):
			level = argv[i+1]
		case strings.HasPrefix(a, "--run="):
			level = strings.TrimPrefix(a, "--run=")
		case strings.HasPrefix(a, "-r") && len(a) > 2:
			level = strings.TrimPrefix(a, "-r")
		default:
			continue
		}
		if level != "1" && level != "quick" {
			return "dcgmi diag level " + level + " (above level 1: minutes of load on every GPU)"
		}
	}
	return ""
}
