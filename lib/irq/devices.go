package irq

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"gpuprep/lib/host"
	"gpuprep/lib/topo"
)

// infinibandDir lists the node's RDMA devices (InfiniBand and RoCE HCAs);
// each one's device link leads to its PCI function.
const infinibandDir = "/sys/class/infiniband"

// PlacedDevices lists the PCI functions whose IRQs gpuprep places on
// their NUMA node, sorted by bus id: every NVIDIA GPU on the bus
// (topo.NVIDIAGPUsOnBus) and every HCA (/sys/class/infiniband/<dev>, a link
// to <PCI function>/infiniband/<dev>).
// All of the node's, not only the job's: another job's GPU wants the same
// placement, so the placement does not depend on which jobs hold it.
func PlacedDevices(r host.Root) ([]string, error) {
	ids, err := topo.NVIDIAGPUsOnBus(r)
	if err != nil {
		return nil, fmt.Errorf("listing GPUs: %w", err)
	}
	hcas, _ := r.ReadDir(infinibandDir) // none: no HCA
	for _, name := range hcas {
		dev, err := r.LinkTarget(infinibandDir + "/" + name) // <PCI function>/infiniband/<dev>
		if err != nil {
			continue
		}
		// A software RDMA device (rxe, siw) sits under /sys/devices/virtual.
		if id := path.Base(path.Dir(path.Dir(dev))); checkBusID(id) == nil && strings.Contains(id, ":") {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}
