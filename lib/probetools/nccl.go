package probetools

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The message sizes all_reduce_perf is held to.
const (
	size1GiB  = 1 << 30
	size16GiB = 16 << 30
)

// allReduceArgs run one all_reduce_perf process across gpus GPUs, at
// 1 GiB and 16 GiB (1G times 16).
func allReduceArgs(gpus int) []string {
	return []string{"-b", "1G", "-e", "16G", "-f", "16", "-g", strconv.Itoa(gpus)}
}

// runAllReduce runs `all_reduce_perf -b 1G -e 16G -f 16 -g <gpus>` and
// reads its output (see parseAllReduce). A run that timed out, or that
// has no 16 GiB line, or that exits non-zero without its "Out of bounds
// values" footer, is an Error.
func runAllReduce(ctx context.Context, t Tool, gpus int, timeout time.Duration) Result {
	args := allReduceArgs(gpus)
	r := Result{Tool: t.Name, Version: t.Version, Args: args}
	o := runTool(ctx, timeout, t.Path, args...)
	r.Seconds = o.Seconds
	read, err := parseAllReduce(o.Stdout)
	if read.Version != "" {
		r.Version = read.Version
	}
	if len(read.Values) > 0 {
		r.Values = read.Values
	}
	switch {
	case o.TimedOut:
		r.Error = failure(o, "all_reduce_perf")
	case err == nil && read.Pass != nil:
		// Its footer is its verdict; it exits non-zero when values
		// were wrong.
		r.Pass = read.Pass
	case o.Err != nil:
		r.Error = failure(o, "all_reduce_perf")
	case err != nil:
		r.Error = failure(o, fmt.Sprintf("all_reduce_perf: %v", err))
	}
	return r
}

// allReduceRead is what parseAllReduce read.
type allReduceRead struct {
	Version string
	Values  map[string]float64
	Pass    *bool
}

var (
	// "# nccl-tests version 2.17.6 nccl-headers=22807 nccl-library=22807"
	// (nccl-tests 2.17 and later).
	ncclVersionRE = regexp.MustCompile(`^#\s*nccl-tests version\s+(\S+)`)
	// "# Out of bounds values : 0 OK"
	oobRE = regexp.MustCompile(`^#\s*Out of bounds values\s*:\s*(\d+)`)
	// "# Avg bus bandwidth    : 480.512 "
	avgBusRE = regexp.MustCompile(`^#\s*Avg bus bandwidth\s*:\s*([0-9.eE+-]+)`)
)

// parseAllReduce reads all_reduce_perf's output: the version header, the
// column header (the first "busbw" column is out of place: its place
// differs between nccl-tests versions, which added "root"), the result
// lines of 1 GiB and 16 GiB, "# Avg bus bandwidth" and "# Out of bounds
// values" (0: Pass). It is an error when the 16 GiB line is missing.
func parseAllReduce(out string) (allReduceRead, error) {
	read := allReduceRead{Values: map[string]float64{}}
	busCol := -1
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if m := ncclVersionRE.FindStringSubmatch(line); m != nil {
			read.Version = m[1]
		} else if m := oobRE.FindStringSubmatch(line); m != nil {
			read.Pass = boolp(m[1] == "0")
		} else if m := avgBusRE.FindStringSubmatch(line); m != nil {
			if v, err := strconv.ParseFloat(m[1], 64); err == nil {
				read.Values["busbw_gbps_avg"] = v
			}
		} else if strings.HasPrefix(line, "#") {
			if c := busbwColumn(line); c >= 0 && busCol < 0 {
				busCol = c
			}
		} else if busCol >= 0 {
			readResultLine(line, busCol, read.Values)
		}
	}
	if _, ok := read.Values["busbw_gbps_16GiB"]; !ok {
		return read, errors.New("no result line for 16 GiB")
	}
	return read, nil
}

// busbwColumn is the index of the first "busbw" in a "# size count ..."
// header line (the fields after "#"), or -1.
func busbwColumn(line string) int {
	f := strings.Fields(strings.TrimPrefix(line, "#"))
	if len(f) == 0 || f[0] != "size" {
		return -1
	}
	for i, name := range f {
		if name == "busbw" {
			return i
		}
	}
	return -1
}

// readResultLine reads a result line's size and out-of-place busbw into
// values when the size is 1 GiB or 16 GiB.
func readResultLine(line string, busCol int, values map[string]float64) {
	f := strings.Fields(line)
	if len(f) <= busCol {
		return
	}
	size, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return
	}
	bw, err := strconv.ParseFloat(f[busCol], 64)
	if err != nil {
		return
	}
	switch size {
	case size1GiB:
		values["busbw_gbps_1GiB"] = bw
	case size16GiB:
		values["busbw_gbps_16GiB"] = bw
	}
}
