package nodedesc

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/gpu"
	"gpuprep/lib/srunconf"
	"gpuprep/lib/topo"
)

// Every fact srunwrap reads survives the file, free-form values (a
// product pattern with spaces, an env value with quotes, a backslash, a
// tab and non-ASCII) included.
func TestFormatRoundTrip(t *testing.T) {
	d := &Description{Version: Version, BootID: bootA, Gpuprep: "v1 dirty", Written: time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC),
		ConfigFile: "/etc/gpuprep/gpuprep.toml", SlurmGPUs: []int{3, 0},
		Node: topo.Node{
			Hostname: "gpu-01",
			NUMA:     []topo.NUMANode{{ID: 0, CPUs: cpuset.MustParse("0-3"), Distances: []int{10, 20}}, {ID: 1, CPUs: cpuset.New(), Distances: []int{20, 10}}},
			Cores:    []topo.Core{{ID: 0, CPUs: cpuset.MustParse("0,2")}, {ID: 1, CPUs: cpuset.MustParse("1,3")}},
			GPUs: []topo.GPU{{
				Device: gpu.Device{Index: 0, Minor: 3, UUID: "GPU-1", BusID: "0000:18:00.0", MIG: gpu.MIGState{Capable: true, Current: true, Pending: true, Devices: []gpu.MIGDevice{{GI: 1, CI: 0, UUID: "MIG-a", GICapMinor: -1, CICapMinor: -1}, {GI: 2, CI: 0, GICapMinor: -1, CICapMinor: -1}}}},
				NUMA:   0, CPUAffinity: cpuset.MustParse("0-3"), MemoryNUMANodes: []int{1},
				NearNICs: []topo.NearNIC{{Name: "mlx5_0", Path: topo.PathSwitch}},
				Place:    topo.PCIPlace{BusID: "0000:18:00.0", SysPath: "/sys/devices/pci0000:17/0000:18:00.0", NUMANode: -1, LocalCPUs: cpuset.MustParse("0-3")},
			}},
			NICs: []topo.NIC{{Name: "mlx5_0", Kind: "roce", NetDevs: []string{"eth2", "eth3"}, Ports: []topo.IBPort{{Number: 1, State: "ACTIVE", LinkLayer: "Ethernet"}},
				PCIPlace: topo.PCIPlace{BusID: "0000:19:00.0", SysPath: "/sys/devices/pci0000:17/0000:19:00.0", NUMANode: 0, LocalCPUs: cpuset.MustParse("0-3")}}},
		},
		Srunwrap: srunconf.SrunwrapSection{GPU: "narrow", CPUBinding: "keep", Memory: "bind", GPUMemoryNodes: true, Checks: map[string]string{"memlock": "refuse"}},
		NCCL: srunconf.NCCLSection{Fabrics: []srunconf.NCCLFabric{
			{Name: "ib ndr", Nodes: "gpu[01-04]", Partitions: []string{"a", "b"}, Products: []string{"DGX H100*"}, IBHCA: "auto",
				Env: map[string]string{"NCCL_SOCKET_IFNAME": "=bond0", "X": "say \"hi\"\\\tü", "EMPTY": ""}, Force: []string{"X"}},
			{IBHCA: "off"},
		}},
	}
	got, err := decode("f", encode(d))
	if err != nil {
		t.Fatalf("%v\n%s", err, encode(d))
	}
	if !reflect.DeepEqual(got, d) {
		t.Errorf("read back\n%+v\nwant\n%+v\nfile:\n%s", got, d, encode(d))
	}
}

// A damaged file is an error naming the file and line, never a partial
// description.
func TestFormatRefusesGarbage(t *testing.T) {
	head := "gpuprep-node-description 2\n"
	for _, c := range []struct{ text, want string }{
		{"", "empty"},
		{"{\"version\":1}\n", "f:1: not a node description"},
		{head + "numa 0 0-3\n", "f:2: numa: 2 fields, want 3"},
		{head + "numa x 0-3 10\n", `f:2: "x" is not a number`},
		{head + "core 0-z\n", `f:2: "0-z" is not a CPU list`},
		{head + "gpu_pci 0 0000:18:00.0 0 - /sys\n", "f:2: gpu_pci: no gpu 0 line before it"},
		{head + "hostname \"unterminated\n", "f:2: bad quoted field"},
		{head + "fabric 3 name x\n", "f:2: fabric 3: fabrics are numbered from 0"},
		{head + "written yesterday\n", "f:2: written:"},
	} {
		_, err := decode("f", []byte(c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.text, err, c.want)
		}
	}
	// Unknown keys (a newer gpuprep of the same format version) are skipped.
	if d, err := decode("f", []byte(head+"hostname n\nnew_fact 1 2 3\n")); err != nil || d.Node.Hostname != "n" {
		t.Errorf("unknown key: %+v %v", d, err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte("gpuprep-node-description 2\nhostname \"a b\"\nnuma 0 0-3 10\ncore 0\ngpu 0 0 GPU-1 0 0-3 -\ngpu_pci 0 b 0 - /s\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := decode("f", b)
		if err != nil || d.Version != Version {
			return
		}
		// What parses writes back to something that parses the same.
		again, err := decode("f", encode(d))
		if err != nil {
			t.Fatalf("re-encoded file does not parse: %v\n%s", err, encode(d))
		}
		if string(encode(again)) != string(encode(d)) {
			t.Fatalf("not stable:\n%s\n%s", encode(d), encode(again))
		}
	})
}
