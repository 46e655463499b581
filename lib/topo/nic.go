package topo

import (
	"path"
	"sort"
	"strconv"
	"strings"

	"gpuprep/lib/host"
)

// NIC is a network adapter on PCI: an InfiniBand or RoCE HCA
// (/sys/class/infiniband) or an Ethernet NIC (/sys/class/net).
type NIC struct {
	Name    string   `json:"name"`     // "mlx5_0", or the net device for a plain NIC
	Kind    string   `json:"kind"`     // "infiniband", "roce" or "ethernet"
	NetDevs []string `json:"net_devs"` // net devices on the same PCI function
	Ports   []IBPort `json:"ports"`    // HCA ports; empty for plain NICs
	PCIPlace
}

// IBPort is /sys/class/infiniband/<dev>/ports/<n>/{state,rate,link_layer}.
type IBPort struct {
	Number    int    `json:"number"`
	State     string `json:"state"` // "ACTIVE", "DOWN", ...
	Rate      string `json:"rate"`  // "400 Gb/sec (4X NDR)"
	LinkLayer string `json:"link_layer"`
}

// readNICs lists HCAs from /sys/class/infiniband and NICs from
// /sys/class/net whose "device" link leads to a PCI function. Virtual net
// devices (lo, bridges, veth) have no PCI device and are left out.
func readNICs(r host.Root) ([]NIC, error) {
	byBus := map[string]*NIC{}
	var order []string
	add := func(n NIC) *NIC {
		if old, ok := byBus[n.BusID]; ok {
			return old
		}
		byBus[n.BusID] = &n
		order = append(order, n.BusID)
		return byBus[n.BusID]
	}
	ibs, _ := r.ReadDir("/sys/class/infiniband")
	for _, name := range ibs {
		dir := "/sys/class/infiniband/" + name
		sp, err := r.Resolve(dir)
		if err != nil {
			continue
		}
		bus := parentPCI(sp)
		if bus == "" {
			continue
		}
		place, err := readPCIPlace(r, bus)
		if err != nil {
			return nil, err
		}
		n := add(NIC{Name: name, Kind: "infiniband", PCIPlace: place})
		n.Ports = readIBPorts(r, dir)
		for _, p := range n.Ports {
			if strings.EqualFold(p.LinkLayer, "Ethernet") {
				n.Kind = "roce"
			}
		}
	}
	nets, _ := r.ReadDir("/sys/class/net")
	for _, name := range nets {
		dev, err := r.Resolve("/sys/class/net/" + name + "/device")
		if err != nil {
			continue
		}
		bus := parentPCI(dev)
		if bus == "" {
			continue
		}
		n, ok := byBus[bus]
		if !ok {
			place, err := readPCIPlace(r, bus)
			if err != nil {
				return nil, err
			}
			n = add(NIC{Name: name, Kind: "ethernet", PCIPlace: place})
		}
		n.NetDevs = append(n.NetDevs, name)
	}
	out := make([]NIC, 0, len(order))
	for _, b := range order {
		out = append(out, *byBus[b])
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func readIBPorts(r host.Root, dir string) []IBPort {
	names, _ := r.ReadDir(dir + "/ports")
	var ports []IBPort
	for _, pn := range names {
		num, err := strconv.Atoi(pn)
		if err != nil {
			continue
		}
		pd := path.Join(dir, "ports", pn)
		p := IBPort{Number: num}
		p.State, _ = r.ReadString(pd + "/state")
		if _, s, ok := strings.Cut(p.State, ": "); ok { // "4: ACTIVE"
			p.State = s
		}
		p.Rate, _ = r.ReadString(pd + "/rate")
		p.LinkLayer, _ = r.ReadString(pd + "/link_layer")
		ports = append(ports, p)
	}
	sort.Slice(ports, func(i, j int) bool { return ports[i].Number < ports[j].Number })
	return ports
}
