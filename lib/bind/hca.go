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

// near is a GPU's nearest usable HCA ports and the path to them.
type near struct {
	ports []hcaPort
	path  topo.PCIPath
}

// hcaGroup is classes whose nearest ports are the same set: their ranks
// share the ports out in local id order.
type hcaGroup struct {
	classes []int
	ranks   int
}

// groupHCAs finds each class's nearest ports (classes with a GPU of their
// own) and groups the classes with the same ones.
func (l *layout) groupHCAs() {
	l.ports = usablePorts(l.in.Node)
	byKey := map[string]int{}
	for c := range l.classes {
		cl := &l.classes[c]
		cl.hcaGroup = -1
		if cl.r.gpu == nil || len(l.ports) == 0 {
			continue
		}
		if k := slices.IndexFunc(l.classes[:c], func(o class) bool { return o.r.gpu == cl.r.gpu }); k >= 0 {
			cl.near = l.classes[k].near // the same GPU as an earlier class
		} else {
			b, path := nearestPorts(l.in.Node, cl.r.gpu, l.ports)
			cl.near = near{b, path}
		}
		key := ""
		for _, p := range cl.near.ports {
			key += p.entry + ","
		}
		g, ok := byKey[key]
		if !ok {
			g = len(l.hcaGroups)
			byKey[key] = g
			l.hcaGroups = append(l.hcaGroups, hcaGroup{})
		}
		l.hcaGroups[g].classes = append(l.hcaGroups[g].classes, c)
		l.hcaGroups[g].ranks += l.mult(c)
		cl.hcaGroup = g
	}
}

// planHCAs gives local rank i (of class c), when it has a GPU, the HCA
// ports nearest to it. Ranks whose nearest ports are the same set share
// them out in rank order: with at least as many ports as ranks each rank
// gets its own (ports j, j+k, ... of k ranks), with fewer they take them
// round robin.
func (l *layout) planHCAs(i, c int, p *Plan) {
	cl := &l.classes[c]
	switch {
	case cl.r.gpu == nil:
		p.HCAFrom = "none: the rank has no GPU of its own"
		return
	case len(l.ports) == 0:
		p.HCAFrom = "none: no InfiniBand or RoCE HCA with an active port"
		return
	}
	g := &l.hcaGroups[cl.hcaGroup]
	j, k := 0, g.ranks
	for _, o := range g.classes {
		j += l.below(o, i)
	}
	b := cl.near.ports
	m := len(b)
	var mine []string
	if m >= k {
		for x := j; x < m; x += k {
			mine = append(mine, b[x].entry)
		}
	} else {
		mine = []string{b[j%m].entry}
	}
	p.HCAs = mine
	if l.in.Brief {
		return
	}
	p.HCAFrom = fmt.Sprintf("%s: %s (%s) of GPU %d", strings.Join(mine, ","), pathWords[cl.near.path], cl.near.path, cl.r.gpu.Index)
	if k > 1 || m > len(mine) {
		p.HCAFrom += fmt.Sprintf("; %s equally near, shared out among %s", plural(m, "port", "ports"), plural(k, "rank", "ranks"))
	}
}
