package health

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"gpuprep/lib/host"
	"gpuprep/lib/textfmt"
)

// Swap is the node's active swap.
type Swap struct {
	Devices []string // from /proc/swaps
	TotalKB int64
}

// ReadSwap reads /proc/swaps (a header line, then one line per active swap
// area: "Filename Type Size Used Priority"), or, where it is absent,
// SwapTotal from /proc/meminfo.
func ReadSwap(r host.Root) (Swap, error) {
	var s Swap
	b, err := r.ReadFile("/proc/swaps")
	if errors.Is(err, fs.ErrNotExist) {
		return readMeminfoSwap(r)
	}
	if err != nil {
		return s, err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "Filename") {
		return s, fmt.Errorf("/proc/swaps: first line %q is not the \"Filename Type Size Used Priority\" header", textfmt.Fit(lines[0], 60))
	}
	for i, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) < 3 {
			return s, fmt.Errorf("/proc/swaps:%d: %q is not \"Filename Type Size Used Priority\"", i+2, textfmt.Fit(l, 60))
		}
		kb, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return s, fmt.Errorf("/proc/swaps:%d: size %q is not a number", i+2, textfmt.Fit(f[2], 60))
		}
		s.Devices = append(s.Devices, f[0])
		s.TotalKB += kb
	}
	return s, nil
}

// readMeminfoSwap reads "SwapTotal: <n> kB" from /proc/meminfo.
func readMeminfoSwap(r host.Root) (Swap, error) {
	var s Swap
	b, err := r.ReadFile("/proc/meminfo")
	if err != nil {
		return s, err
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for ln := 1; sc.Scan(); ln++ {
		v, ok := strings.CutPrefix(sc.Text(), "SwapTotal:")
		if !ok {
			continue
		}
		num, _, _ := strings.Cut(strings.TrimSpace(v), " ")
		if s.TotalKB, err = strconv.ParseInt(num, 10, 64); err != nil {
			return s, fmt.Errorf("/proc/meminfo:%d: SwapTotal %q is not a number", ln, textfmt.Fit(strings.TrimSpace(v), 60))
		}
		return s, nil
	}
	return s, fmt.Errorf("/proc/meminfo: no SwapTotal line: %w", fs.ErrNotExist)
}
