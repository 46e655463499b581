package fixturegen

import (
	"fmt"
	"strings"

	"gpuprep/internal/nodeshape"
)

// guid is a NIC's deterministic 64-bit GUID: Mellanox OUI, the shape and
// the NIC's index.
func guid(s nodeshape.Shape, i int) uint64 {
	h := uint64(0)
	for _, c := range s.Name {
		h = h*31 + uint64(c)
	}
	return 0xa088c20300000000 | (h&0xffff)<<16 | uint64(i)
}

// guidString prints a GUID as sysfs does: "a088:c203:0012:3400".
func guidString(g uint64) string {
	return fmt.Sprintf("%04x:%04x:%04x:%04x", g>>48, (g>>32)&0xffff, (g>>16)&0xffff, g&0xffff)
}

func hexBytes(b []byte) string {
	parts := make([]string, len(b))
	for i, x := range b {
		parts[i] = fmt.Sprintf("%02x", x)
	}
	return strings.Join(parts, ":")
}

func guidBytes(g uint64) []byte {
	b := make([]byte, 8)
	for i := range b {
		b[i] = byte(g >> (56 - 8*i))
	}
	return b
}

// ibSpeed is a port rate in Mb/s for the net device's speed file.
func ibSpeed(rate string) int {
	var gbps int
	if _, err := fmt.Sscanf(rate, "%d Gb/sec", &gbps); err != nil {
		return -1
	}
	return gbps * 1000
}

// writeNet writes /sys/class/net, /sys/class/infiniband and
// /sys/class/infiniband_verbs for the shape's NICs, plus the loopback.
func writeNet(t *tree, l *layout, pt *pciTree) {
	lo := "sys/devices/virtual/net/lo"
	writeNetdev(t, lo, netdev{addr: "00:00:00:00:00:00", addrLen: 6, typ: 772, mtu: 65536,
		operstate: "unknown", speed: 0, ifindex: 1, flags: "0x9", noDevice: true})
	t.link("sys/class/net/lo", lo)
	uverbs := 0
	virtio := 2 // virtio0 and virtio1 are the disk and the balloon
	for i, n := range l.s.NICs {
		d := pt.ByBDF[strings.ToLower(n.BusID)]
		g := guid(l.s, i)
		parent := d.Path
		nd := netdev{ifindex: 2 + i, operstate: "up", flags: "0x1003", speed: ibSpeed(portRate(n))}
		switch {
		case n.IBName != "" && linkLayer(n) == "InfiniBand":
			nd.addr = "00:00:10:49:fe:80:00:00:00:00:00:00:" + hexBytes(guidBytes(g))
			nd.addrLen, nd.typ, nd.mtu = 20, 32, 4092
			nd.broadcast = "00:ff:ff:ff:ff:12:40:1b:ff:ff:00:00:00:00:00:00:ff:ff:ff:ff"
		case n.IBName != "":
			gb := guidBytes(g)
			nd.addr = hexBytes([]byte{gb[0], gb[1], gb[2], gb[5], gb[6], gb[7]})
			nd.addrLen, nd.typ, nd.mtu = 6, 1, 9000
		default:
			nd.addr = fmt.Sprintf("52:54:00:%02x:%02x:%02x", byte(g>>16), byte(g>>8), byte(g))
			nd.addrLen, nd.typ, nd.mtu = 6, 1, 1500
			if d.Model.Driver == "virtio-pci" {
				vdir := fmt.Sprintf("%s/virtio%d", d.Path, virtio)
				virtio++
				t.line(vdir+"/vendor", "0x1af4")
				t.line(vdir+"/device", "0x0001")
				t.line(vdir+"/status", "0x0000000f")
				t.link(vdir+"/driver", "sys/bus/virtio/drivers/virtio_net")
				t.link(fmt.Sprintf("sys/bus/virtio/drivers/virtio_net/virtio%d", virtio-1), vdir)
				t.link(fmt.Sprintf("sys/bus/virtio/devices/virtio%d", virtio-1), vdir)
				parent = vdir
				nd.speed = -1
			}
		}
		if nd.broadcast == "" {
			nd.broadcast = "ff:ff:ff:ff:ff:ff"
		}
		ndir := parent + "/net/" + n.NetName
		writeNetdev(t, ndir, nd)
		t.link(ndir+"/device", parent)
		t.link("sys/class/net/"+n.NetName, ndir)
		if n.IBName == "" {
			continue
		}
		h := l.nicModel(n)
		ib := d.Path + "/infiniband/" + n.IBName
		t.link("sys/class/infiniband/"+n.IBName, ib)
		t.link(ib+"/device", d.Path)
		t.line(ib+"/node_guid", guidString(g))
		t.line(ib+"/sys_image_guid", guidString(g))
		t.line(ib+"/node_type", "1: CA")
		t.linef(ib+"/node_desc", "%s %s", l.s.Hostname, n.IBName)
		t.line(ib+"/fw_ver", h.FW)
		t.line(ib+"/hca_type", h.HCAType)
		t.line(ib+"/board_id", h.BoardID)
		t.line(ib+"/hw_rev", "0x0")
		for pi, p := range n.Ports {
			pd := fmt.Sprintf("%s/ports/%d", ib, pi+1)
			t.line(pd+"/state", p.State)
			phys := "5: LinkUp"
			if !strings.Contains(p.State, "ACTIVE") {
				phys = "3: Disabled"
			}
			t.line(pd+"/phys_state", phys)
			t.line(pd+"/rate", p.Rate)
			t.line(pd+"/link_layer", p.LinkLayer)
			gid0 := "fe80:0000:0000:0000:" + guidString(g)
			if p.LinkLayer == "InfiniBand" {
				t.linef(pd+"/lid", "0x%x", 0x10+i)
				t.line(pd+"/sm_lid", "0x1")
				t.line(pd+"/lid_mask_count", "0")
				t.line(pd+"/sm_sl", "0")
				t.line(pd+"/cap_mask", "0xa751e848")
				t.line(pd+"/gid_attrs/types/0", "IB/RoCE v1")
			} else {
				t.line(pd+"/lid", "0x0")
				t.line(pd+"/sm_lid", "0x0")
				t.line(pd+"/lid_mask_count", "0")
				t.line(pd+"/cap_mask", "0x00010000")
				t.line(pd+"/gid_attrs/types/0", "IB/RoCE v1")
				t.line(pd+"/gid_attrs/types/1", "RoCE v2")
				t.line(pd+"/gid_attrs/ndevs/0", n.NetName)
				t.line(pd+"/gid_attrs/ndevs/1", n.NetName)
				t.line(pd+"/gids/1", gid0)
			}
			t.line(pd+"/gids/0", gid0)
		}
		uv := fmt.Sprintf("%s/infiniband_verbs/uverbs%d", d.Path, uverbs)
		t.link(fmt.Sprintf("sys/class/infiniband_verbs/uverbs%d", uverbs), uv)
		t.link(uv+"/device", d.Path)
		t.line(uv+"/ibdev", n.IBName)
		t.line(uv+"/abi_version", "1")
		t.linef(uv+"/dev", "231:%d", 192+uverbs)
		uverbs++
	}
	if uverbs > 0 {
		t.line("sys/class/infiniband_verbs/abi_version", "6")
	}
}

type netdev struct {
	addr, broadcast string
	addrLen, typ    int
	mtu             int
	operstate       string
	speed           int
	ifindex         int
	flags           string
	noDevice        bool
}

func writeNetdev(t *tree, dir string, n netdev) {
	if n.broadcast == "" {
		n.broadcast = "00:00:00:00:00:00"
	}
	t.line(dir+"/address", n.addr)
	t.line(dir+"/broadcast", n.broadcast)
	t.linef(dir+"/addr_len", "%d", n.addrLen)
	t.line(dir+"/addr_assign_type", "0")
	t.linef(dir+"/type", "%d", n.typ)
	t.linef(dir+"/mtu", "%d", n.mtu)
	t.line(dir+"/operstate", n.operstate)
	t.line(dir+"/carrier", "1")
	t.linef(dir+"/ifindex", "%d", n.ifindex)
	t.linef(dir+"/iflink", "%d", n.ifindex)
	t.line(dir+"/flags", n.flags)
	t.line(dir+"/tx_queue_len", "1000")
	if !n.noDevice {
		t.linef(dir+"/speed", "%d", n.speed)
		t.line(dir+"/duplex", "full")
		t.line(dir+"/dev_port", "0")
		t.line(dir+"/dev_id", "0x0")
	}
}
