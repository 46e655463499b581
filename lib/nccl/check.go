package nccl

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"gpuprep/lib/host"
	"gpuprep/lib/srunconf"
)

// Finding is one problem a runtime check found. Check is one of
// srunconf.SrunwrapChecks ("nccl_topo_file", "nccl_hca", "memlock",
// "nccl_env"). A Note is something the user should know that is no
// problem found (a file too large to check whole): it is printed unless
// the check is off, and never refuses the command.
type Finding struct {
	Check, Msg string
	Note       bool
}

// Check runs srunwrap's runtime checks in the task's own mount namespace:
// r is normally host.NewRoot("/"), which inside a container is the
// container's view. env is the environment the command will get (after
// Plan's variables are applied); memlock is the soft RLIMIT_MEMLOCK in
// bytes (Memlock; unix.RLIM_INFINITY when unlimited).
//
// Findings come in the order nccl_topo_file, nccl_hca, memlock, nccl_env.
func Check(r host.Root, env func(string) string, memlock uint64) []Finding {
	var out []Finding
	out = append(out, checkTopoFile(r, env)...)
	out = append(out, checkHCA(r, env)...)
	out = append(out, checkMemlock(r, env, memlock)...)
	out = append(out, checkEnv(env)...)
	return out
}

// checkTopoFile is nccl_topo_file: NCCL_TOPO_FILE exists, is a regular
// file and its start parses as a topology (ProbeTopoFile: never blocked
// by a FIFO, at most TopoProbeMax bytes read, whatever the file's size).
// A file larger than that is a note, never a refusal: srunwrap cannot
// tell more of it without reading it. NCCL opens a relative name from the
// rank's working directory, which is srunwrap's.
func checkTopoFile(r host.Root, env func(string) string) []Finding {
	p := env("NCCL_TOPO_FILE")
	if p == "" {
		return nil
	}
	full, err := topoPath(p)
	if err != nil {
		return []Finding{{Check: "nccl_topo_file", Msg: fmt.Sprintf("NCCL_TOPO_FILE=%s is relative and the working directory is unknown (%v); if NCCL cannot open it, it falls back to detecting the topology (%s)", srunconf.Show(p), err, detectCost)}}
	}
	h, err := ProbeTopoFile(r, full, TopoProbeMax)
	if err != nil {
		return []Finding{{Check: "nccl_topo_file", Msg: topoProblem(p, full, err)}}
	}
	if h.Partial() {
		return []Finding{{Check: "nccl_topo_file", Note: true, Msg: fmt.Sprintf("NCCL_TOPO_FILE=%s is %s, more than the tens of KiB of a node's topology: srunwrap checked only its first %s (they start an NCCL topology); NCCL reads all of it at init, in every rank", srunconf.Show(p), size(h.Size), size(int64(h.Checked)))}}
	}
	return nil
}

// topoPath is NCCL_TOPO_FILE's value p as an absolute path: relative to
// the working directory, as NCCL opens it.
func topoPath(p string) (string, error) {
	if path.IsAbs(p) {
		return p, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return filepath.ToSlash(filepath.Join(wd, p)), nil
}

// topoProblem says what ProbeTopoFile's err means for NCCL_TOPO_FILE=p
// (full when relative).
func topoProblem(p, full string, err error) string {
	var nr *NotRegularError
	switch {
	case errors.As(err, &nr):
		where := ""
		if full != p {
			where = " (" + srunconf.ShowN(full, 80) + ")"
		}
		return fmt.Sprintf("NCCL_TOPO_FILE=%s%s is %s, not a regular file: NCCL may block or fail at init reading it, or go without it, detecting the topology itself (%s)", srunconf.Show(p), where, nr.Kind, detectCost)
	case errors.Is(err, ErrNotTopology):
		return fmt.Sprintf("NCCL_TOPO_FILE=%s does not parse as an NCCL topology (%v): NCCL fails at init or goes without it, detecting the topology itself (%s)", srunconf.Show(p), err, detectCost)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("NCCL_TOPO_FILE=%s cannot be read here (%v); is it mounted into the container? NCCL then falls back to detecting the topology (%s)", srunconf.Show(p), err, detectCost)
	}
	return fmt.Sprintf("NCCL_TOPO_FILE=%s cannot be read (%v): NCCL fails at init or goes without it, detecting the topology itself (%s)", srunconf.Show(p), err, detectCost)
}

// detectCost is what losing the topology file costs.
const detectCost = "2-4x slower collectives in published reports, on VMs whose detected topology is wrong"

// maxIBDevs is how many NCCL_IB_HCA entries NCCL reads (MAX_IB_DEVS in
// net_ib: 32 in current releases, 16 in old ones); the rest are ignored, and
// not checked.
const maxIBDevs = 32

// ibClass is where the kernel lists RDMA devices; NCCL opens them through
// rdma-core, which reads the same directory and /dev/infiniband/uverbsN.
const ibClass = "/sys/class/infiniband"

// checkHCA is nccl_hca: every device and port NCCL_IB_HCA names exists in
// this mount namespace, the port is ACTIVE, and its uverbs device node is
// here (a container without /dev/infiniband sees the HCAs in sysfs but
// cannot open them). An exclude list ("^...") is not checked, nor the
// entries past NCCL's first maxIBDevs (one finding says how many), and
// each entry is checked once however often it is repeated.
func checkHCA(r host.Root, env func(string) string) []Finding {
	val := env(IBHCAName)
	if val == "" {
		return nil
	}
	spec := ParseIBHCA(val)
	if spec.Exclude {
		return nil
	}
	n := len(spec.HCAs)
	if n <= maxIBDevs {
		return checkHCAs(r, val, spec)
	}
	spec.HCAs = spec.HCAs[:maxIBDevs]
	return append(checkHCAs(r, val, spec), Finding{Check: "nccl_hca", Msg: fmt.Sprintf(
		"%s=%s: names %d devices; NCCL reads only the first %d (MAX_IB_DEVS), the ones srunwrap checked", IBHCAName, srunconf.Show(val), n, maxIBDevs)})
}

// checkHCAs checks the devices spec (of NCCL_IB_HCA=val) names.
func checkHCAs(r host.Root, val string, spec HCASpec) []Finding {
	devs, _ := r.ReadDir(ibClass)
	var out []Finding
	add := func(format string, a ...any) {
		out = append(out, Finding{Check: "nccl_hca", Msg: fmt.Sprintf("%s=%s: ", IBHCAName, srunconf.Show(val)) + fmt.Sprintf(format, a...)})
	}
	if len(spec.HCAs) == 0 {
		add("names no device; NCCL then uses every HCA, the far ones too")
		return out
	}
	if len(devs) == 0 {
		add("no RDMA device is visible here (%s is empty or absent: a container without the host's sysfs?); NCCL falls back to TCP sockets", ibClass)
		return out
	}
	seen := make(map[HCAPort]bool, len(spec.HCAs))
	for _, h := range spec.HCAs {
		if seen[h] {
			continue // said once
		}
		seen[h] = true
		if !h.PortOK() {
			add("%s: port %s is not a number (NCCL reads it as port %d)", srunconf.QuoteN(h.Name, 64), srunconf.QuoteN(h.PortText, 64), h.Port)
		}
		var match []string
		exact := false
		for _, d := range devs {
			if d == h.Name {
				exact = true
				match = append(match, d)
			} else if !spec.Exact && strings.HasPrefix(d, h.Name) {
				match = append(match, d)
			}
		}
		switch {
		case len(match) == 0:
			add("%s: no such device here (have %s); NCCL will not use it", srunconf.QuoteN(h.Name, 64), strings.Join(devs, ", "))
			continue
		case exact && len(match) > 1:
			// mlx5_1 meaning mlx5_1, not mlx5_1*: a prefix like "mlx5"
			// that names no device is taken as meant.
			add("%s also selects %s (NCCL matches names by prefix); write %s=%s to name exactly these", srunconf.QuoteN(h.Name, 64), strings.Join(slices.DeleteFunc(slices.Clone(match), func(d string) bool { return d == h.Name }), ", "), IBHCAName, srunconf.ShowN(exactSpec(spec), 100))
		}
		if exact { // the device meant; the others are what the warning above is about
			out = append(out, checkDevice(r, val, h.Name, h)...)
			continue
		}
		// A prefix naming several devices: check those with the port.
		var withPort []string
		for _, d := range match {
			if h.Port == -1 || r.Exists(fmt.Sprintf("%s/ports/%d", devDir(r, d), h.Port)) {
				withPort = append(withPort, d)
			}
		}
		if len(withPort) == 0 {
			add("no device %s selects (%s) has port %d; NCCL will not use them", srunconf.QuoteN(h.Name, 64), strings.Join(match, ", "), h.Port)
		}
		for _, d := range withPort {
			out = append(out, checkDevice(r, val, d, h)...)
		}
	}
	return out
}

// exactSpec is spec with "=" in front.
func exactSpec(spec HCASpec) string {
	spec.Exact = true
	return spec.String()
}

// checkDevice checks one device NCCL_IB_HCA selects: the port (or any
// port) is present and ACTIVE, and /dev/infiniband has its uverbs node.
func checkDevice(r host.Root, val, dev string, h HCAPort) []Finding {
	var out []Finding
	add := func(format string, a ...any) {
		out = append(out, Finding{Check: "nccl_hca", Msg: fmt.Sprintf("%s=%s: ", IBHCAName, srunconf.Show(val)) + fmt.Sprintf(format, a...)})
	}
	dir := devDir(r, dev)
	if h.Port != -1 {
		pd := fmt.Sprintf("%s/ports/%d", dir, h.Port)
		if !r.Exists(pd) {
			ports, _ := r.ReadDir(dir + "/ports")
			add("%s has no port %d (ports: %s); NCCL will not use it", dev, h.Port, orNone(ports))
			return out
		}
		if st := portState(r, pd); st != "" && st != "ACTIVE" {
			add("port %d of %s is %s; NCCL skips ports that are not ACTIVE", h.Port, dev, st)
		}
	} else {
		ports, _ := r.ReadDir(dir + "/ports")
		active := false
		for _, p := range ports {
			if st := portState(r, dir+"/ports/"+p); st == "" || st == "ACTIVE" {
				active = true
			}
		}
		if !active {
			add("%s has no ACTIVE port (ports: %s); NCCL skips it", dev, orNone(ports))
		}
	}
	pci, err := r.Resolve(dir + "/device")
	if err != nil {
		return out
	}
	uv, _ := r.ReadDir(pci + "/infiniband_verbs")
	for _, u := range uv {
		if strings.HasPrefix(u, "uverbs") && !r.Exists("/dev/infiniband/"+u) {
			add("%s is in sysfs but /dev/infiniband/%s is not here, so NCCL cannot open it (a container without /dev/infiniband?); NCCL falls back to TCP sockets", dev, u)
		}
	}
	return out
}

// devDir is /sys/class/infiniband/<dev> with its link resolved, so that a
// fixture root's absolute links work too.
func devDir(r host.Root, dev string) string {
	dir, err := r.Resolve(ibClass + "/" + dev)
	if err != nil {
		return ibClass + "/" + dev
	}
	return dir
}

// portState reads ports/<n>/state ("4: ACTIVE") and returns "ACTIVE"; ""
// when it cannot be read.
func portState(r host.Root, portDir string) string {
	s, err := readAttr(r, portDir+"/state")
	if err != nil {
		return ""
	}
	if _, name, ok := strings.Cut(s, ": "); ok {
		return name
	}
	return s
}

// readAttr reads a sysfs attribute through r, trimmed: at most a page, as
// sysfs gives, and never blocking. Inside a container sysfs is whatever
// its mounts put there: a larger file, or one that is not a regular file
// (a FIFO would block the rank), is an error (host.ReadRegular).
func readAttr(r host.Root, p string) (string, error) {
	b, _, err := host.ReadRegular(r.Path(p), 4096)
	return strings.Trim(string(b), " \t\r\n\x00"), err
}

func orNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}

// Product is the DMI product name (/sys/class/dmi/id/product_name),
// trimmed; "" when absent (arm64 without DMI, some VMs).
func Product(r host.Root) string {
	s, err := readAttr(r, "/sys/class/dmi/id/product_name")
	if err != nil {
		return ""
	}
	return s
}
