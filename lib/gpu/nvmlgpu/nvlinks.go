package nvmlgpu

// linkKind is what the far end of one active NVLink is.
type linkKind int

const (
	linkToGPU    linkKind = iota // a GPU (NVLINK_DEVICE_TYPE_GPU, or type unknown): see BusID
	linkToSwitch                 // an NVSwitch (NVLINK_DEVICE_TYPE_SWITCH)
	linkToCPU                    // a CPU's NVLink port (NVLINK_DEVICE_TYPE_IBMNPU): not a GPU path
)

// linkEnd is the far end of one active NVLink of a GPU.
type linkEnd struct {
	Kind  linkKind
	BusID string // canonical PCI address of the far end, when known
}

// countNVLinks turns each GPU's active links into the NVLink matrix of
// Device.NVLinks: m[i][j] is the number of links between GPU i and GPU j,
// -1 on the diagonal.
//
// busIDs[i] is GPU i's canonical bus id and ends[i] its active links. A link
// to a GPU of this node counts for that GPU. A link to an NVSwitch, or to a
// bus id that is no GPU of this node (a switch whose type NVML could not
// tell), joins the fabric: through it GPU i reaches every other GPU j that
// also has fabric links, with min(fabric links of i, fabric links of j)
// links, which is what `nvidia-smi topo -m` shows as NV18 on HGX boards.
// Links to a CPU are not counted.
func countNVLinks(busIDs []string, ends [][]linkEnd) [][]int {
	n := len(busIDs)
	byBus := make(map[string]int, n)
	for i, b := range busIDs {
		byBus[b] = i
	}
	m := make([][]int, n)
	fabric := make([]int, n)
	for i := range m {
		m[i] = make([]int, n)
		m[i][i] = -1
		if i >= len(ends) {
			continue
		}
		for _, e := range ends[i] {
			switch e.Kind {
			case linkToCPU:
				continue
			case linkToGPU:
				if j, ok := byBus[e.BusID]; ok {
					if j != i {
						m[i][j]++
					}
					continue
				}
			}
			fabric[i]++
		}
	}
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i != j && fabric[i] > 0 && fabric[j] > 0 {
				m[i][j] += min(fabric[i], fabric[j])
			}
		}
	}
	return m
}
