package gpumock

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
	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
	"gpuprep/lib/topo"
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
			pdevs, err := gpu.OpenProcfs(root).Devices()
			if err != nil {
				t.Fatal(err)
			}
			m, err := Open(shape.GPUModel, root)
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
			for i := range pdevs {
				p, q := pdevs[i], mdevs[i]
				type ident struct {
					Index, Minor        int
					UUID, BusID, Name   string
					MIGCurrent, Capable bool
				}
				a := ident{p.Index, p.Minor, p.UUID, p.BusID, p.Name, p.MIG.Current, p.MIG.Capable}
				b := ident{q.Index, q.Minor, q.UUID, q.BusID, q.Name, q.MIG.Current, q.MIG.Capable}
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

// A CPU-less-memory node without a mock: procfs lists the GPUs, topo
// places them.
func TestProcfsGH200(t *testing.T) {
	shape, ok := nodeshape.ByName("gh200")
	if !ok {
		t.Skip("no gh200 shape")
	}
	root := host.NewRoot(testroot.Shared(t, "gh200"))
	node, err := topo.Discover(root, gpu.OpenProcfs(root), topo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	devs := node.GPUs
	if len(devs) != len(shape.GPUs) {
		t.Fatalf("%d GPUs", len(devs))
	}
	for i, d := range devs {
		g := shape.GPUs[i]
		if d.BusID != g.BusID || d.NUMA != g.NUMANode || d.CPUAffinity.IsEmpty() {
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
	root := host.NewRoot(testroot.Shared(t, "h200x2"))
	node, err := topo.Discover(root, gpu.OpenProcfs(root), topo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	devs := node.GPUs
	want := []struct{ bus, uuid string }{
		{"0000:00:06.0", "GPU-2592755b-9f24-f5f7-a815-34d27fe0aa35"},
		{"0000:00:07.0", "GPU-8616ec97-e106-6012-40ea-fed5b03fc595"},
	}
	if len(devs) != len(want) {
		t.Fatalf("%d GPUs", len(devs))
	}
	for i, d := range devs {
		if d.Index != i || d.Minor != i || d.BusID != want[i].bus || d.UUID != want[i].uuid || d.Name != "NVIDIA H200" ||
			d.Place.NUMANode != -1 || d.NUMA != 0 || !d.CPUAffinity.Equal(cpuset.Range(0, 31)) || d.MIG.Current || d.NVLinks != nil {
			t.Errorf("GPU %d: %+v", i, d)
		}
	}
}
