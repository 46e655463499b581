package fixturegen

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strings"

	"gpuprep/internal/nodeshape"
)

// bdf is a PCI address.
type bdf struct{ Domain, Bus, Dev, Fn int }

func (b bdf) String() string {
	return fmt.Sprintf("%04x:%02x:%02x.%x", b.Domain, b.Bus, b.Dev, b.Fn)
}

func parseBDF(s string) (bdf, error) {
	var b bdf
	if n, err := fmt.Sscanf(s, "%4x:%2x:%2x.%1x", &b.Domain, &b.Bus, &b.Dev, &b.Fn); err != nil || n != 4 {
		return b, fmt.Errorf("bad PCI bus id %q", s)
	}
	if b.String() != strings.ToLower(s) {
		return b, fmt.Errorf("PCI bus id %q is not in the kernel's form (%s)", s, b)
	}
	return b, nil
}

// pciModel is a device's identity as sysfs and its config space show it.
type pciModel struct {
	Vendor, Device, SubVendor, SubDevice uint16
	Class                                uint32 // 0x030200
	Rev                                  byte
	Driver                               string // "" for none
	Gen, Width                           int    // PCIe link; 0: no link files
	PortType                             int    // PCIe capability port type: 0 endpoint, 4 root, 5 upstream, 6 downstream
}

// pciDev is one PCI function of the fixture.
type pciDev struct {
	Addr   bdf
	Model  pciModel
	NUMA   int // NUMA node it is local to (before PCINUMAUnknown hides it)
	Parent *pciDev
	// HostBus is the root bus of the host bridge above (pci<domain>:<bus>).
	HostBus     int
	Secondary   int // bridges
	Subordinate int
	Bridge      bool
	Path        string // node path of its sysfs directory
}

// pciTree is the PCI hierarchy of a shape.
type pciTree struct {
	Devs  []*pciDev
	ByBDF map[string]*pciDev
}

// speed is a PCIe generation's per-lane rate as sysfs prints it.
func speed(gen int) string {
	return map[int]string{1: "2.5 GT/s PCIe", 2: "5.0 GT/s PCIe", 3: "8.0 GT/s PCIe",
		4: "16.0 GT/s PCIe", 5: "32.0 GT/s PCIe", 6: "64.0 GT/s PCIe"}[gen]
}

func gpuModel(devID uint16) pciModel {
	sub := map[uint16]uint16{0x2330: 0x16c1, 0x20b0: 0x134f, 0x2333: 0x18bf, 0x2b00: 0x1999, 0x2342: 0x16eb,
		0x20b5: 0x1533, 0x1db6: 0x124a, 0x15f8: 0x118f, 0x1b38: 0x11d9}[devID]
	gen := 5
	switch devID {
	case 0x20b0, 0x20b5: // A100: PCIe 4
		gen = 4
	case 0x1db6, 0x15f8, 0x1b38: // V100, P100, P40: PCIe 3
		gen = 3
	}
	return pciModel{Vendor: 0x10de, Device: devID, SubVendor: 0x10de, SubDevice: sub,
		Class: 0x030200, Rev: 0xa1, Driver: "nvidia", Gen: gen, Width: 16}
}

// hca describes a Mellanox adapter.
type hca struct {
	pci                  pciModel
	HCAType, FW, BoardID string
}

func (l *layout) nicModel(n nodeshape.NIC) hca {
	switch {
	case n.IBName == "" && l.s.PCINUMAUnknown:
		return hca{pci: pciModel{Vendor: 0x1af4, Device: 0x1041, SubVendor: 0x1af4, SubDevice: 0x1100,
			Class: 0x020000, Rev: 0x01, Driver: "virtio-pci"}}
	case n.IBName == "":
		return hca{pci: pciModel{Vendor: 0x8086, Device: 0x1592, SubVendor: 0x8086, SubDevice: 0x0002,
			Class: 0x020000, Rev: 0x02, Driver: "ice", Gen: 4, Width: 16}}
	case linkLayer(n) == "Ethernet":
		return hca{pci: pciModel{Vendor: 0x15b3, Device: 0x101d, SubVendor: 0x15b3, SubDevice: 0x0016,
			Class: 0x020000, Driver: "mlx5_core", Gen: 4, Width: 16},
			HCAType: "MT4125", FW: "22.39.1002", BoardID: "MT_0000000359"}
	case strings.Contains(portRate(n), "EDR"): // ConnectX-5
		return hca{pci: pciModel{Vendor: 0x15b3, Device: 0x1017, SubVendor: 0x15b3, SubDevice: 0x0007,
			Class: 0x020700, Driver: "mlx5_core", Gen: 3, Width: 16},
			HCAType: "MT4119", FW: "16.35.2000", BoardID: "MT_0000000008"}
	case strings.Contains(portRate(n), "HDR"):
		return hca{pci: pciModel{Vendor: 0x15b3, Device: 0x101b, SubVendor: 0x15b3, SubDevice: 0x0007,
			Class: 0x020700, Driver: "mlx5_core", Gen: 4, Width: 16},
			HCAType: "MT4123", FW: "20.39.1002", BoardID: "MT_0000000223"}
	default:
		return hca{pci: pciModel{Vendor: 0x15b3, Device: 0x1021, SubVendor: 0x15b3, SubDevice: 0x0041,
			Class: 0x020700, Driver: "mlx5_core", Gen: 5, Width: 16},
			HCAType: "MT4129", FW: "28.39.1002", BoardID: "MT_0000000838"}
	}
}

// rootPortModel and switchPortModel are the platform's PCIe bridges.
func (l *layout) rootPortModel() pciModel {
	m := pciModel{Class: 0x060400, Driver: "pcieport", Gen: 5, Width: 16, PortType: 4}
	switch {
	case l.s.PCINUMAUnknown: // QEMU pcie-root-port
		m.Vendor, m.Device, m.SubVendor, m.SubDevice = 0x1b36, 0x000c, 0x1b36, 0x0000
	case l.s.CPUVendor == "AuthenticAMD":
		m.Vendor, m.Device, m.SubVendor, m.SubDevice, m.Gen = 0x1022, 0x1483, 0x1022, 0x1453, 4
	case l.s.CPUModel == "Neoverse-N1": // Ampere Altra
		m.Vendor, m.Device, m.SubVendor, m.SubDevice, m.Gen = 0x1def, 0xe101, 0x0000, 0x0000, 4
	case l.s.CPUModel == "Cavium ThunderX2 CN9975":
		m.Vendor, m.Device, m.SubVendor, m.SubDevice, m.Gen = 0x14e4, 0x9084, 0x0000, 0x0000, 3
	case l.isArm():
		m.Vendor, m.Device, m.SubVendor, m.SubDevice = 0x10de, 0x22b2, 0x10de, 0x0000
	default:
		m.Vendor, m.Device, m.SubVendor, m.SubDevice, m.Rev = 0x8086, 0x352a, 0x8086, 0x0000, 0x04
	}
	return m
}

func (l *layout) switchPortModel(portType int) pciModel {
	m := pciModel{Vendor: 0x1000, Device: 0xc030, SubVendor: 0x1000, SubDevice: 0xa064,
		Class: 0x060400, Rev: 0xb0, Driver: "pcieport", Gen: 5, Width: 16, PortType: portType}
	if l.s.CPUVendor == "AuthenticAMD" { // PEX88096, PCIe 4
		m.Device, m.SubDevice, m.Gen = 0xc010, 0xa064, 4
	}
	return m
}

func linkLayer(n nodeshape.NIC) string {
	if len(n.Ports) == 0 {
		return ""
	}
	return n.Ports[0].LinkLayer
}

func portRate(n nodeshape.NIC) string {
	if len(n.Ports) == 0 {
		return ""
	}
	return n.Ports[0].Rate
}

// buildPCI lays out the PCI hierarchy. Devices sharing a PCISwitch sit behind
// root port H:01.0 -> switch upstream port (H+1):00.0 -> one downstream port
// (H+2):<i>.0 each, H being three below the lowest bus of the group, under
// host bridge pci<domain>:<H>. A device with PCISwitch 0 sits on bus 0 of its
// domain, or behind a root port of its own there.
func buildPCI(l *layout) (*pciTree, error) {
	pt := &pciTree{ByBDF: map[string]*pciDev{}}
	type ep struct {
		dev *pciDev
		sw  int
	}
	var eps []ep
	for _, g := range l.s.GPUs {
		a, _ := parseBDF(g.BusID)
		eps = append(eps, ep{&pciDev{Addr: a, Model: gpuModel(g.DeviceID), NUMA: g.NUMANode}, g.PCISwitch})
	}
	for _, n := range l.s.NICs {
		a, _ := parseBDF(n.BusID)
		eps = append(eps, ep{&pciDev{Addr: a, Model: l.nicModel(n).pci, NUMA: n.NUMANode}, n.PCISwitch})
	}
	if l.s.PCINUMAUnknown { // a VM's chipset: host bridge and a virtio disk
		eps = append(eps,
			ep{&pciDev{Addr: bdf{0, 0, 0, 0}, Model: pciModel{Vendor: 0x8086, Device: 0x29c0, SubVendor: 0x1af4,
				SubDevice: 0x1100, Class: 0x060000}}, 0},
			ep{&pciDev{Addr: bdf{0, 0, 1, 0}, Model: pciModel{Vendor: 0x1af4, Device: 0x1042, SubVendor: 0x1af4,
				SubDevice: 0x1100, Class: 0x018000, Rev: 0x01, Driver: "virtio-pci"}}, 0},
		)
	}
	add := func(d *pciDev) error {
		k := d.Addr.String()
		if _, dup := pt.ByBDF[k]; dup {
			return fmt.Errorf("fixturegen: %s: PCI address %s used twice", l.s.Name, k)
		}
		pt.ByBDF[k] = d
		pt.Devs = append(pt.Devs, d)
		return nil
	}
	type busRange struct{ lo, hi int }
	ranges := map[int][]busRange{} // by domain: buses each host bridge spans

	groups := map[int][]*pciDev{}
	var solo []*pciDev
	for _, e := range eps {
		if e.sw == 0 {
			solo = append(solo, e.dev)
		} else {
			groups[e.sw] = append(groups[e.sw], e.dev)
		}
	}
	var ids []int
	for id := range groups {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	for _, id := range ids {
		g := groups[id]
		sort.Slice(g, func(i, j int) bool { return g[i].Addr.Bus < g[j].Addr.Bus })
		dom, numa := g[0].Addr.Domain, g[0].NUMA
		lo, hi := g[0].Addr.Bus, g[len(g)-1].Addr.Bus
		for _, d := range g {
			if d.Addr.Domain != dom || d.NUMA != numa {
				return nil, fmt.Errorf("fixturegen: %s: PCI switch %d mixes domains or NUMA nodes", l.s.Name, id)
			}
		}
		h := lo - 3
		if h < 0 {
			return nil, fmt.Errorf("fixturegen: %s: PCI switch %d: bus %02x leaves no room for root port and switch", l.s.Name, id, lo)
		}
		rp := &pciDev{Addr: bdf{dom, h, 1, 0}, Model: l.rootPortModel(), NUMA: numa, HostBus: h,
			Bridge: true, Secondary: h + 1, Subordinate: hi}
		up := &pciDev{Addr: bdf{dom, h + 1, 0, 0}, Model: l.switchPortModel(5), NUMA: numa, HostBus: h,
			Parent: rp, Bridge: true, Secondary: h + 2, Subordinate: hi}
		for _, d := range []*pciDev{rp, up} {
			if err := add(d); err != nil {
				return nil, err
			}
		}
		for i, d := range g {
			dn := &pciDev{Addr: bdf{dom, h + 2, i, 0}, Model: l.switchPortModel(6), NUMA: numa, HostBus: h,
				Parent: up, Bridge: true, Secondary: d.Addr.Bus, Subordinate: d.Addr.Bus}
			d.Parent, d.HostBus = dn, h
			if err := add(dn); err != nil {
				return nil, err
			}
			if err := add(d); err != nil {
				return nil, err
			}
		}
		ranges[dom] = append(ranges[dom], busRange{h, hi})
	}

	// Devices on bus 0 take their slots first; root ports get the free ones.
	used := map[int]map[int]bool{}
	numaOf := map[int]int{}
	sort.Slice(solo, func(i, j int) bool { return solo[i].Addr.String() < solo[j].Addr.String() })
	for _, d := range solo {
		if used[d.Addr.Domain] == nil {
			used[d.Addr.Domain] = map[int]bool{}
		}
		if d.Addr.Bus == 0 {
			used[d.Addr.Domain][d.Addr.Dev] = true
		}
	}
	hiBus := map[int]int{}
	for _, d := range solo {
		dom := d.Addr.Domain
		if d.Model.Class != 0x060000 && d.Model.Class != 0x018000 { // chipset devices have no locality of note
			if n, seen := numaOf[dom]; seen && n != d.NUMA {
				return nil, fmt.Errorf("fixturegen: %s: devices on bus 0 of domain %04x span NUMA nodes %d and %d", l.s.Name, dom, n, d.NUMA)
			}
			numaOf[dom] = d.NUMA
		}
		if d.Addr.Bus > hiBus[dom] {
			hiBus[dom] = d.Addr.Bus
		}
		if d.Addr.Bus == 0 {
			if err := add(d); err != nil {
				return nil, err
			}
			continue
		}
		slot := 1
		for used[dom][slot] {
			slot++
		}
		used[dom][slot] = true
		rp := &pciDev{Addr: bdf{dom, 0, slot, 0}, Model: l.rootPortModel(), NUMA: d.NUMA,
			Bridge: true, Secondary: d.Addr.Bus, Subordinate: d.Addr.Bus}
		d.Parent = rp
		if err := add(rp); err != nil {
			return nil, err
		}
		if err := add(d); err != nil {
			return nil, err
		}
	}
	for dom, hi := range hiBus {
		ranges[dom] = append(ranges[dom], busRange{0, hi})
	}
	for _, d := range pt.Devs { // chipset devices take the domain's locality
		if d.Model.Class == 0x060000 || d.Model.Class == 0x018000 {
			d.NUMA = numaOf[d.Addr.Domain]
		}
	}
	for dom, rs := range ranges {
		sort.Slice(rs, func(i, j int) bool { return rs[i].lo < rs[j].lo })
		for i := 1; i < len(rs); i++ {
			if rs[i].lo <= rs[i-1].hi {
				return nil, fmt.Errorf("fixturegen: %s: PCI domain %04x: host bridges at buses %02x and %02x overlap",
					l.s.Name, dom, rs[i-1].lo, rs[i].lo)
			}
		}
	}
	for _, d := range pt.Devs {
		d.Path = devPath(d)
	}
	sort.Slice(pt.Devs, func(i, j int) bool { return pt.Devs[i].Addr.String() < pt.Devs[j].Addr.String() })
	return pt, nil
}

// devPath is /sys/devices/pci<domain>:<hostbus>/<port>/.../<bdf>.
func devPath(d *pciDev) string {
	var chain []string
	for p := d; p != nil; p = p.Parent {
		chain = append([]string{p.Addr.String()}, chain...)
	}
	return fmt.Sprintf("sys/devices/pci%04x:%02x/%s", d.Addr.Domain, d.HostBus, strings.Join(chain, "/"))
}

// writePCI writes every PCI function's sysfs directory, /sys/bus/pci and the
// driver directories.
func writePCI(t *tree, l *layout, pt *pciTree) {
	for _, d := range pt.Devs {
		m := d.Model
		name := d.Addr.String()
		t.link("sys/bus/pci/devices/"+name, d.Path)
		p := d.Path
		t.linef(p+"/vendor", "0x%04x", m.Vendor)
		t.linef(p+"/device", "0x%04x", m.Device)
		t.linef(p+"/subsystem_vendor", "0x%04x", m.SubVendor)
		t.linef(p+"/subsystem_device", "0x%04x", m.SubDevice)
		t.linef(p+"/class", "0x%06x", m.Class)
		t.linef(p+"/revision", "0x%02x", m.Rev)
		t.linef(p+"/numa_node", "%d", l.pciNUMA(d.NUMA))
		local := l.localCPUs(d.NUMA)
		t.line(p+"/local_cpus", cpuMask(local, l.nCPU()))
		l.list(t, p+"/local_cpulist", local)
		t.line(p+"/enable", "1")
		t.line(p+"/irq", "0")
		t.line(p+"/msi_bus", "1")
		t.line(p+"/broken_parity_status", "0")
		t.line(p+"/d3cold_allowed", "1")
		t.linef(p+"/modalias", "pci:v%08Xd%08Xsv%08Xsd%08Xbc%02Xsc%02Xi%02X", m.Vendor, m.Device,
			m.SubVendor, m.SubDevice, m.Class>>16, (m.Class>>8)&0xff, m.Class&0xff)
		uevent := ""
		if m.Driver != "" {
			uevent = "DRIVER=" + m.Driver + "\n"
		}
		uevent += fmt.Sprintf("PCI_CLASS=%X\nPCI_ID=%04X:%04X\nPCI_SUBSYS_ID=%04X:%04X\nPCI_SLOT_NAME=%s\nMODALIAS=pci:v%08Xd%08Xsv%08Xsd%08Xbc%02Xsc%02Xi%02X\n",
			m.Class, m.Vendor, m.Device, m.SubVendor, m.SubDevice, name,
			m.Vendor, m.Device, m.SubVendor, m.SubDevice, m.Class>>16, (m.Class>>8)&0xff, m.Class&0xff)
		t.file(p+"/uevent", uevent)
		if m.Gen > 0 {
			t.line(p+"/current_link_speed", speed(m.Gen))
			t.linef(p+"/current_link_width", "%d", m.Width)
			t.line(p+"/max_link_speed", speed(m.Gen))
			t.linef(p+"/max_link_width", "%d", m.Width)
		}
		if d.Bridge {
			t.linef(p+"/secondary_bus_number", "%d", d.Secondary)
			t.linef(p+"/subordinate_bus_number", "%d", d.Subordinate)
		}
		t.bytes(p+"/config", configSpace(d))
		if m.Driver != "" {
			drv := "sys/bus/pci/drivers/" + m.Driver
			t.link(p+"/driver", drv)
			t.link(drv+"/"+name, p)
		}
	}
}

// configSpace is the first 256 bytes of a function's configuration space
// (what root reads from sysfs "config"): identity, bridge bus numbers and a
// PCI Express capability with the link status.
func configSpace(d *pciDev) []byte {
	m := d.Model
	c := make([]byte, 256)
	le := binary.LittleEndian
	le.PutUint16(c[0x00:], m.Vendor)
	le.PutUint16(c[0x02:], m.Device)
	le.PutUint16(c[0x04:], 0x0406) // memory space, bus master, INTx disabled
	le.PutUint16(c[0x06:], 0x0010) // capabilities list
	c[0x08] = m.Rev
	c[0x09] = byte(m.Class)
	c[0x0a] = byte(m.Class >> 8)
	c[0x0b] = byte(m.Class >> 16)
	c[0x0c] = 0x10 // cache line size
	if d.Bridge {
		c[0x0e] = 0x01
		c[0x18] = byte(d.Addr.Bus)
		c[0x19] = byte(d.Secondary)
		c[0x1a] = byte(d.Subordinate)
	} else {
		le.PutUint16(c[0x2c:], m.SubVendor)
		le.PutUint16(c[0x2e:], m.SubDevice)
	}
	c[0x3c] = 0xff
	c[0x3d] = 0x01
	if m.Gen == 0 { // conventional PCI function: no PCIe capability
		c[0x06] = 0
		return c
	}
	c[0x34] = 0x40
	const exp = 0x40
	c[exp] = 0x10 // PCI Express capability
	c[exp+1] = 0x00
	le.PutUint16(c[exp+0x02:], uint16(0x2|m.PortType<<4))
	linkCap := uint32(m.Gen) | uint32(m.Width)<<4
	le.PutUint32(c[exp+0x0c:], linkCap)
	le.PutUint16(c[exp+0x12:], uint16(m.Gen)|uint16(m.Width)<<4)
	return c
}
