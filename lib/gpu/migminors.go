package gpu

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"gpuprep/lib/host"
	"gpuprep/lib/textfmt"
)

// MIGMinorsPath lists the nvidia-caps device minor of every MIG capability
// the driver can create.
const MIGMinorsPath = "/proc/driver/nvidia-caps/mig-minors"

// MIGMinors maps MIG capability names to /dev/nvidia-caps/nvidia-cap<N>
// minors, as /proc/driver/nvidia-caps/mig-minors lists them:
// "gpu<minor>/gi<G>/access" and "gpu<minor>/gi<G>/ci<C>/access" (also
// "config" and "monitor"). <minor> is the GPU's device minor.
type MIGMinors map[string]int

// ReadMIGMinors reads /proc/driver/nvidia-caps/mig-minors under root. A
// missing file (no nvidia-caps, or no driver) gives a nil map and no error.
func ReadMIGMinors(root host.Root) (MIGMinors, error) {
	b, err := root.ReadFile(MIGMinorsPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("gpu: %w", err)
	}
	return ParseMIGMinors(MIGMinorsPath, b)
}

// ParseMIGMinors parses mig-minors text: one "<name> <minor>" per line. name
// is used in errors ("<name>:<line>: ...").
func ParseMIGMinors(name string, data []byte) (MIGMinors, error) {
	m := MIGMinors{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for ln := 1; sc.Scan(); ln++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("%s:%d: want \"<capability> <minor>\", found %q", name, ln, textfmt.Clip(line, 60))
		}
		v, err := strconv.Atoi(f[1])
		if err != nil || v < 0 {
			return nil, fmt.Errorf("%s:%d: minor %q is not a number", name, ln, textfmt.Clip(f[1], 60))
		}
		m[f[0]] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return m, nil
}

// GI is the cap minor of GPU instance gi on the GPU with device minor
// gpuMinor, -1 when not listed.
func (m MIGMinors) GI(gpuMinor, gi int) int {
	return m.get(fmt.Sprintf("gpu%d/gi%d/access", gpuMinor, gi))
}

// CI is the cap minor of compute instance ci of GPU instance gi, -1 when not
// listed.
func (m MIGMinors) CI(gpuMinor, gi, ci int) int {
	return m.get(fmt.Sprintf("gpu%d/gi%d/ci%d/access", gpuMinor, gi, ci))
}

func (m MIGMinors) get(k string) int {
	if v, ok := m[k]; ok {
		return v
	}
	return -1
}
