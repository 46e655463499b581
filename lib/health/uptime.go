package health

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"gpuprep/lib/host"
)

// Uptime is how long the node has been up: /proc/uptime, parsed by
// ParseUptime.
func Uptime(r host.Root) (time.Duration, error) {
	s, err := r.ReadString("/proc/uptime")
	if err != nil {
		return 0, err
	}
	d, err := ParseUptime(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", r.Path("/proc/uptime"), err)
	}
	return d, nil
}

// ParseUptime reads /proc/uptime's first field, the seconds since boot
// ("3605.21 7001.50").
func ParseUptime(s string) (time.Duration, error) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return 0, fmt.Errorf("empty")
	}
	sec, err := strconv.ParseFloat(f[0], 64)
	if err != nil || sec < 0 || sec > 1e10 {
		return 0, fmt.Errorf("uptime %q is not a number of seconds", f[0])
	}
	return time.Duration(sec * float64(time.Second)), nil
}
