package gpu

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gpuprep/internal/nodeshape"
	"gpuprep/internal/testroot"
	"gpuprep/lib/cpuset"
	"gpuprep/lib/host"
)

// fixtureRoot unpacks test/roots/<name>.tar.gz, skipping when it is absent.
// It keeps only what the GPU backends read (gpuFile): a few hundred of a
// fixture's tens of thousands of entries, which makes it quick.
func fixtureRoot(t testing.TB, name string) host.Root {
	t.Helper()
	if !slices.Contains(testroot.Names(), name) {
		t.Skipf("no fixture root %s", name)
	}
	archive, err := testroot.Archive(name)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !gpuFile(strings.TrimPrefix(h.Name, "./"), h.Typeflag == tar.TypeDir) {
			continue
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(tw, tr); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := testroot.Extract(&buf, dir); err != nil {
		t.Fatal(err)
	}
	return host.NewRoot(dir)
}

// gpuFile says whether the GPU backends read a fixture entry: the driver's
// procfs, the PCI device links and their numa_node and local_cpulist, and
// the possible-CPU list.
func gpuFile(name string, dir bool) bool {
	switch {
	case strings.HasPrefix(name, "proc/driver/"), strings.HasPrefix(name, "sys/bus/pci/devices/"),
		name == "sys/devices/system/cpu/possible":
		return true
	case strings.HasPrefix(name, "sys/devices/pci"):
		return dir || path.Base(name) == "numa_node" || path.Base(name) == "local_cpulist"
	}
	return false
}

// On every fixture root that has a mock, mock:<model> and procfs agree on
// everything procfs can know.
func TestMockAgreesWithProcfs(t *testing.T) {
	for _, shape := range nodeshape.All() {
		if shape.GPUModel == "" {
			continue
		}
		t.Run(shape.Name, func(t *testing.T) {
			t.Parallel()
			root := fixtureRoot(t, shape.Name)
			pdevs, err := OpenProcfs(root).Devices()
			if err != nil {
				t.Fatal(err)
			}
			m, err := Open("mock:"+shape.GPUModel, root)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			mdevs, err := m.Devices()
			if err != nil {
				t.Fatal(err)
			}
			if len(pdevs) != len(mdevs) || len(pdevs) != len(shape.GPUs) {
				t.Fatalf("procfs %d GPUs, mock %d, shape %d", len(pdevs), len(mdevs), len(shape.GPUs))
			}
			// On a root without the PCI devices the mock's own NUMA node
			// and CPU affinity (nvmlDeviceGetNumaNodeId, GetCpuAffinity)
			// are used: they agree with the fixture's sysfs too.
			bare, err := OpenMock(shape.GPUModel, host.NewRoot(t.TempDir()))
			if err != nil {
				t.Fatal(err)
			}
			defer bare.Close()
			bdevs, err := bare.Devices()
			if err != nil {
				t.Fatal(err)
			}
			for i := range bdevs {
				if bdevs[i].NUMANode != pdevs[i].NUMANode || !bdevs[i].CPUAffinity.Equal(pdevs[i].CPUAffinity) {
					t.Errorf("GPU %d: mock alone NUMA %d CPUs %s, fixture %d %s", i,
						bdevs[i].NUMANode, bdevs[i].CPUAffinity, pdevs[i].NUMANode, pdevs[i].CPUAffinity)
				}
			}
			for i := range pdevs {
				p, q := pdevs[i], mdevs[i]
				type ident struct {
					Index, Minor        int
					UUID, BusID, Name   string
					NUMANode            int
					CPUs                string
					MIGCurrent, Capable bool
				}
				a := ident{p.Index, p.Minor, p.UUID, p.BusID, p.Name, p.NUMANode, p.CPUAffinity.String(), p.MIG.Current, p.MIG.Capable}
				b := ident{q.Index, q.Minor, q.UUID, q.BusID, q.Name, q.NUMANode, q.CPUAffinity.String(), q.MIG.Current, q.MIG.Capable}
				if a != b {
					t.Errorf("GPU %d:\nprocfs %+v\nmock   %+v", i, a, b)
				}
				if len(p.MIG.Devices) != len(q.MIG.Devices) {
					t.Errorf("GPU %d: procfs MIG %+v, mock %+v", i, p.MIG.Devices, q.MIG.Devices)
					continue
				}
				for k := range p.MIG.Devices {
					x, y := p.MIG.Devices[k], q.MIG.Devices[k]
					x.Profile, x.UUID = y.Profile, y.UUID // procfs cannot know them
					if x != y {
						t.Errorf("GPU %d MIG %d: procfs %+v, mock %+v", i, k, x, y)
					}
				}
			}
		})
	}
}

// A CPU-less-memory node without a mock: procfs alone.
func TestProcfsGH200(t *testing.T) {
	shape, ok := nodeshape.ByName("gh200")
	if !ok {
		t.Skip("no gh200 shape")
	}
	devs, err := OpenProcfs(fixtureRoot(t, "gh200")).Devices()
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != len(shape.GPUs) {
		t.Fatalf("%d GPUs", len(devs))
	}
	for i, d := range devs {
		g := shape.GPUs[i]
		if d.BusID != g.BusID || d.NUMANode != g.NUMANode || d.CPUAffinity.IsEmpty() {
			t.Errorf("GPU %d: %+v", i, d)
		}
		// numa_status names the node that holds the memory, the first of
		// the shape's list; the others are empty MIG placeholders.
		if !reflect.DeepEqual(d.MemoryNUMANodes, g.MemoryNUMANodes[:1]) {
			t.Errorf("GPU %d memory nodes %v, want %v", i, d.MemoryNUMANodes, g.MemoryNUMANodes[:1])
		}
	}
}

// The root captured on the 2x H200 VM.
func TestProcfsCapturedH200(t *testing.T) {
	devs, err := OpenProcfs(fixtureRoot(t, "h200x2")).Devices()
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ bus, uuid string }{
		{"0000:00:06.0", "GPU-2592755b-9f24-f5f7-a815-34d27fe0aa35"},
		{"0000:00:07.0", "GPU-8616ec97-e106-6012-40ea-fed5b03fc595"},
	}
	if len(devs) != len(want) {
		t.Fatalf("%d GPUs", len(devs))
	}
	for i, d := range devs {
		if d.Index != i || d.Minor != i || d.BusID != want[i].bus || d.UUID != want[i].uuid || d.Name != "NVIDIA H200" ||
			d.NUMANode != -1 || !d.CPUAffinity.Equal(cpuset.Range(0, 31)) || d.MIG.Current || d.NVLinks != nil {
			t.Errorf("GPU %d: %+v", i, d)
		}
	}
}
