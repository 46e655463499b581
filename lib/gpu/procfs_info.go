package gpu

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"gpuprep/lib/textfmt"
)

// gpuInformation is what gpuprep takes from the driver's
// /proc/driver/nvidia/gpus/<bus>/information.
type gpuInformation struct {
	Model string // "Model:"
	UUID  string // "GPU UUID:"
	BusID string // "Bus Location:", canonical
	Minor int    // "Device Minor:"
}

// parseInformation parses an information file: "Key: value" lines, the
// key and value separated by a colon and any mix of tabs and spaces. name is
// the file's path for errors ("<name>:<line>: ..."). Unknown keys are
// ignored; Model, GPU UUID, Bus Location and Device Minor must be there.
func parseInformation(name string, data []byte) (gpuInformation, error) {
	info := gpuInformation{Minor: -1}
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for ln := 1; sc.Scan(); ln++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return info, fmt.Errorf("%s:%d: want \"Key: value\", found %q", name, ln, textfmt.Clip(strings.TrimSpace(line), 60))
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "Model":
			info.Model = v
		case "GPU UUID":
			if !strings.HasPrefix(v, "GPU-") {
				return info, fmt.Errorf("%s:%d: GPU UUID %q does not start with GPU-", name, ln, textfmt.Clip(v, 60))
			}
			info.UUID = v
		case "Bus Location":
			bus, ok := parseBusID(v)
			if !ok {
				return info, fmt.Errorf("%s:%d: bus location %q is not a PCI address", name, ln, textfmt.Clip(v, 60))
			}
			info.BusID = bus
		case "Device Minor":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return info, fmt.Errorf("%s:%d: device minor %q is not a number", name, ln, textfmt.Clip(v, 60))
			}
			info.Minor = n
		default:
			continue
		}
		seen[k] = true
	}
	if err := sc.Err(); err != nil {
		return info, fmt.Errorf("%s: %w", name, err)
	}
	for _, k := range []string{"Model", "GPU UUID", "Bus Location", "Device Minor"} {
		if !seen[k] {
			return info, fmt.Errorf("%s: no %q line", name, k+":")
		}
	}
	return info, nil
}
