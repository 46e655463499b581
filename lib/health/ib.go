package health

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"gpuprep/lib/host"
	"gpuprep/lib/textfmt"
)

// IBPort is one port of an RDMA device.
type IBPort struct {
	Device    string // "mlx5_0"
	Port      int
	State     string // "ACTIVE", "DOWN", "INIT", ...
	RateGbps  int    // 400
	Rate      string // "400 Gb/sec (4X NDR)"
	LinkLayer string // "InfiniBand", "Ethernet"
}

// ReadIBPorts reads /sys/class/infiniband/*/ports/*/{state,rate,link_layer}
// ("4: ACTIVE", "400 Gb/sec (4X NDR)", "InfiniBand"), sorted by device and
// port. No devices is an empty list; garbage is an error naming the file.
func ReadIBPorts(r host.Root) ([]IBPort, error) {
	dirs, err := r.Glob("/sys/class/infiniband/*/ports/*")
	if err != nil {
		return nil, err
	}
	var out []IBPort
	for _, d := range dirs {
		n, err := strconv.Atoi(path.Base(d))
		if err != nil {
			continue
		}
		p := IBPort{Device: path.Base(path.Dir(path.Dir(d))), Port: n}
		st, err := r.ReadString(d + "/state")
		if err != nil {
			return nil, err
		}
		_, name, ok := strings.Cut(st, ": ")
		if !ok || name == "" {
			return nil, fmt.Errorf("%s/state: %q is not \"<n>: <STATE>\"", d, textfmt.Fit(st, 60))
		}
		p.State = name
		if p.Rate, err = r.ReadString(d + "/rate"); err != nil {
			return nil, err
		}
		num, _, _ := strings.Cut(p.Rate, " ")
		rate, err := strconv.ParseFloat(num, 64)
		if err != nil || !strings.Contains(p.Rate, "Gb/sec") {
			return nil, fmt.Errorf("%s/rate: %q is not a rate such as \"400 Gb/sec (4X NDR)\"", d, textfmt.Fit(p.Rate, 60))
		}
		p.RateGbps = int(rate)
		if p.LinkLayer, err = r.ReadString(d + "/link_layer"); err != nil {
			p.LinkLayer = "InfiniBand" // old kernels: no link_layer, only IB
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b IBPort) int {
		if c := strings.Compare(a.Device, b.Device); c != 0 {
			return c
		}
		return a.Port - b.Port
	})
	return out, nil
}
