package gpu

import (
	"bufio"
	"bytes"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"gpuprep/lib/host"
	"gpuprep/lib/textfmt"
)

// procMIG reads a GPU's MIG state from the driver's capability files,
// /proc/driver/nvidia/capabilities/gpu<minor>/mig: the folder exists on
// MIG-capable GPUs (its config and monitor files); a gi<G> folder per GPU
// instance, a ci<C> folder in it per compute instance, and in each an access
// file whose "DeviceFileMinor:" is the /dev/nvidia-caps minor.
//
// Without NVML the mode is guessed: Current (and Pending) when instances
// exist; a GPU in MIG mode with no instance reads as MIG off. Profile is "".
func procMIG(root host.Root, minor int) (MIGState, error) {
	var st MIGState
	dir := fmt.Sprintf("/proc/driver/nvidia/capabilities/gpu%d/mig", minor)
	if !root.Exists(dir) {
		return st, nil
	}
	st.Capable = true
	gis, err := root.Glob(dir + "/gi*")
	if err != nil {
		return st, err
	}
	for _, giDir := range gis {
		gi, ok := idAfter(path.Base(giDir), "gi")
		if !ok {
			continue
		}
		giMinor, err := readCapMinor(root, giDir+"/access")
		if err != nil {
			return st, err
		}
		cis, err := root.Glob(giDir + "/ci*")
		if err != nil {
			return st, err
		}
		for _, ciDir := range cis {
			ci, ok := idAfter(path.Base(ciDir), "ci")
			if !ok {
				continue
			}
			ciMinor, err := readCapMinor(root, ciDir+"/access")
			if err != nil {
				return st, err
			}
			st.Devices = append(st.Devices, MIGDevice{GI: gi, CI: ci, GICapMinor: giMinor, CICapMinor: ciMinor})
		}
	}
	sort.Slice(st.Devices, func(a, b int) bool {
		x, y := st.Devices[a], st.Devices[b]
		if x.GI != y.GI {
			return x.GI < y.GI
		}
		return x.CI < y.CI
	})
	st.Current = len(gis) > 0
	st.Pending = st.Current
	return st, nil
}

// idAfter parses "gi12" with prefix "gi" as 12.
func idAfter(name, prefix string) (int, bool) {
	s, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 0
}

// readCapMinor reads the "DeviceFileMinor: N" line of a capability's access
// file.
func readCapMinor(root host.Root, file string) (int, error) {
	b, err := root.ReadFile(file)
	if err != nil {
		return -1, err
	}
	return parseCapMinor(file, b)
}

func parseCapMinor(name string, data []byte) (int, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for ln := 1; sc.Scan(); ln++ {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.TrimSpace(k) != "DeviceFileMinor" {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			return -1, fmt.Errorf("%s:%d: DeviceFileMinor %q is not a number", name, ln, textfmt.Clip(strings.TrimSpace(v), 60))
		}
		return n, nil
	}
	return -1, fmt.Errorf("%s: no DeviceFileMinor line", name)
}
