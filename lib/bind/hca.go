package bind

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gpuprep/lib/topo"
)

// hcaPort is one usable HCA port: an NCCL_IB_HCA entry.
type hcaPort struct {
	entry string // "mlx5_0:1"
	nic   *topo.NIC
}

// usablePorts lists the ACTIVE ports of InfiniBand and RoCE HCAs; RoCE
// HCAs without a net device are left out (NCCL cannot find their GID).
func usablePorts(n *topo.Node) []hcaPort {
	var out []hcaPort
	for i := range n.NICs {
		nic := &n.NICs[i]
		if nic.Kind != "infiniband" && nic.Kind != "roce" {
			continue
		}
		if nic.Kind == "roce" && len(nic.NetDevs) == 0 {
			continue
		}
		for _, p := range nic.Ports {
			if strings.EqualFold(p.State, "ACTIVE") {
				out = append(out, hcaPort{nic.Name + ":" + strconv.Itoa(p.Number), nic})
			}
		}
	}
	return out
}

var pathWords = map[topo.PCIPath]string{
	topo.PathOneSwitch:  "behind the GPU's PCIe switch",
	topo.PathSwitch:     "behind the GPU's PCIe switches",
	topo.PathHostBridge: "on the GPU's PCIe host bridge",
	topo.PathNUMA:       "on the GPU's NUMA node",
	topo.PathSystem:     "across the CPU interconnect",
}

// nearestPorts are the ports nearest to g: by PCI path, then NUMA distance.
func nearestPorts(n *topo.Node, g *topo.GPU, ports []hcaPort) ([]hcaPort, topo.PCIPath) {
	if best, path := nearFromDiscovery(g, ports); best != nil {
		return best, path
	}
	var best []hcaPort
	var bestPath topo.PCIPath
	bestR, bestD := 0, 0
	for _, p := range ports {
		path := topo.PathBetween(g.Place, p.nic.PCIPlace)
		r, d := topo.PathRank(path), numaDistance(n, g.NUMA, p.nic.NUMANode)
		if best == nil || r < bestR || r == bestR && d < bestD {
			best, bestPath, bestR, bestD = nil, path, r, d
		}
		if r == bestR && d == bestD {
			best = append(best, p)
		}
	}
	return best, bestPath
}

// nearFromDiscovery uses GPU.NearNICs, the NICs discovery found nearest
// (all on one path, nearer than across the interconnect): the usable
// ports among them are the nearest usable ones, found without walking PCI
// paths again. Nil when none of them is usable.
func nearFromDiscovery(g *topo.GPU, ports []hcaPort) ([]hcaPort, topo.PCIPath) {
	var best []hcaPort
	var path topo.PCIPath
	for _, near := range g.NearNICs {
		if near.Path == topo.PathSystem {
			return nil, ""
		}
		for _, p := range ports {
			if p.nic.Name == near.Name {
				best, path = append(best, p), near.Path
			}
		}
	}
	return best, path
}

// numaDistance is the SLIT distance from node a to node b; 0 when either
// is unknown, so that unknown places tie.
func numaDistance(n *topo.Node, a, b int) int {
	ia := slices.IndexFunc(n.NUMA, func(nd topo.NUMANode) bool { return nd.ID == a })
	ib := slices.IndexFunc(n.NUMA, func(nd topo.NUMANode) bool { return nd.ID == b })
	if ia < 0 || ib < 0 || ib >= len(n.NUMA[ia].Distances) {
		return 0
	}
	return n.NUMA[ia].Distances[ib]
}

// planHCAs gives each rank with a GPU the HCA ports nearest to it. Ranks
// whose nearest ports are the same set share them out in rank order: with
// at least as many ports as ranks each rank gets its own (ports j, j+k,
// ... of k ranks), with fewer they take them round robin.
func planHCAs(in Input, ranks []rank, plans []Plan) {
	ports := usablePorts(in.Node)
	type near struct {
		ports []hcaPort
		path  topo.PCIPath
	}
	nears := make([]near, len(plans))
	groups := map[string][]int{}
	for i, r := range ranks {
		switch {
		case r.gpu == nil:
			plans[i].HCAFrom = "none: the rank has no GPU of its own"
			continue
		case len(ports) == 0:
			plans[i].HCAFrom = "none: no InfiniBand or RoCE HCA with an active port"
			continue
		}
		if k := slices.IndexFunc(ranks[:i], func(o rank) bool { return o.gpu == r.gpu }); k >= 0 {
			nears[i] = nears[k] // the same GPU as an earlier rank
		} else {
			b, path := nearestPorts(in.Node, r.gpu, ports)
			nears[i] = near{b, path}
		}
		b := nears[i].ports
		key := ""
		for _, p := range b {
			key += p.entry + ","
		}
		groups[key] = append(groups[key], i)
	}
	for _, g := range groups {
		k := len(g)
		for j, i := range g {
			b := nears[i].ports
			m := len(b)
			var mine []string
			if m >= k {
				for x := j; x < m; x += k {
					mine = append(mine, b[x].entry)
				}
			} else {
				mine = []string{b[j%m].entry}
			}
			p := &plans[i]
			p.HCAs = mine
			if in.Brief {
				continue
			}
			p.HCAFrom = fmt.Sprintf("%s: %s (%s) of GPU %d", strings.Join(mine, ","), pathWords[nears[i].path], nears[i].path, ranks[i].gpu.Index)
			if k > 1 || m > len(mine) {
				p.HCAFrom += fmt.Sprintf("; %s equally near, shared out among %s", plural(m, "port", "ports"), plural(k, "rank", "ranks"))
			}
		}
	}
}
