package slurm

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// maxListLen bounds what one list in the environment may expand to
// ("0-99999999" or "1(x4000000000)"), so bad input cannot allocate gigabytes.
const maxListLen = 1 << 20

// maxGPUIndex bounds a GPU index in SLURM_JOB_GPUS and friends.
const maxGPUIndex = 1<<16 - 1

// ParseIndexList reads a list of GPU indices as Slurm writes them in
// SLURM_JOB_GPUS and SLURM_STEP_GPUS: "0,1,3", also with ranges "0-3,6"
// and surrounding white space. Order is kept; the empty string is no GPUs.
func ParseIndexList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, el := range strings.Split(s, ",") {
		el = strings.TrimSpace(el)
		lo, hi, isRange := strings.Cut(el, "-")
		a, err := parseIndex(lo)
		if err != nil {
			return nil, err
		}
		z := a
		if isRange {
			if z, err = parseIndex(hi); err != nil {
				return nil, err
			}
			if z < a {
				return nil, fmt.Errorf("range %s is descending", Quote(el))
			}
		}
		if len(out)+(z-a+1) > maxListLen {
			return nil, errors.New("list too long")
		}
		for i := a; i <= z; i++ {
			out = append(out, i)
		}
	}
	return out, nil
}

func parseIndex(s string) (int, error) {
	if s == "" {
		return 0, errors.New("missing number")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%s is not a number", Quote(s))
		}
	}
	v, err := strconv.Atoi(s)
	if err != nil || v > maxGPUIndex {
		return 0, fmt.Errorf("%s is out of range", Quote(s))
	}
	return v, nil
}

// ParseCountList expands Slurm's compressed per-node counts, as in
// SLURM_TASKS_PER_NODE, SLURM_STEP_TASKS_PER_NODE and
// SLURM_JOB_CPUS_PER_NODE: "2(x3),1" is 2,2,2,1.
func ParseCountList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("empty")
	}
	var out []int
	for _, el := range strings.Split(s, ",") {
		el = strings.TrimSpace(el)
		num, rep := el, "1"
		if i := strings.IndexByte(el, '('); i >= 0 {
			if !strings.HasSuffix(el, ")") || !strings.HasPrefix(el[i+1:], "x") {
				return nil, fmt.Errorf("%s is not N or N(xR)", Quote(el))
			}
			num, rep = el[:i], el[i+2:len(el)-1]
		}
		n, err1 := parseCountNum(num)
		r, err2 := parseCountNum(rep)
		if err1 != nil || err2 != nil || r == 0 {
			return nil, fmt.Errorf("%s is not N or N(xR)", Quote(el))
		}
		if len(out)+r > maxListLen {
			return nil, errors.New("list too long")
		}
		for i := 0; i < r; i++ {
			out = append(out, n)
		}
	}
	return out, nil
}

func parseCountNum(s string) (int, error) {
	if s == "" || len(s) > 9 {
		return 0, errors.New("bad number")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, errors.New("bad number")
		}
	}
	return strconv.Atoi(s)
}

// DeviceRef is one entry of CUDA_VISIBLE_DEVICES or GPU_DEVICE_ORDINAL:
// an index, or a UUID ("GPU-8c2e...", "MIG-..." or the older
// "MIG-GPU-<uuid>/<gi>/<ci>") as Slurm writes for MIG and newer Slurm for
// whole GPUs.
type DeviceRef struct {
	Index int    // -1 when UUID is set
	UUID  string // "" when Index is set
}

func (d DeviceRef) String() string {
	if d.UUID != "" {
		return d.UUID
	}
	return strconv.Itoa(d.Index)
}

// IsMIG says whether the entry names a MIG device.
func (d DeviceRef) IsMIG() bool { return strings.HasPrefix(d.UUID, "MIG-") }

// ParseDeviceList reads CUDA_VISIBLE_DEVICES or GPU_DEVICE_ORDINAL: comma-
// separated indices or GPU-/MIG- UUIDs, mixed as CUDA allows. The empty
// string is an empty list (no device visible).
func ParseDeviceList(s string) ([]DeviceRef, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return []DeviceRef{}, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) > maxListLen {
		return nil, errors.New("list too long")
	}
	out := make([]DeviceRef, 0, len(parts))
	for _, el := range parts {
		el = strings.TrimSpace(el)
		switch {
		case strings.HasPrefix(el, "GPU-") || strings.HasPrefix(el, "MIG-"):
			if len(el) == 4 || strings.ContainsAny(el, " \t\n") {
				return nil, fmt.Errorf("%s is not a device UUID", Quote(el))
			}
			out = append(out, DeviceRef{Index: -1, UUID: el})
		default:
			i, err := parseIndex(el)
			if err != nil {
				return nil, fmt.Errorf("%s is neither an index nor a GPU-/MIG- UUID", Quote(el))
			}
			out = append(out, DeviceRef{Index: i})
		}
	}
	return out, nil
}
