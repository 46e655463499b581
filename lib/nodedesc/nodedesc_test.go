package nodedesc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	_ "gpuprep/internal/gpumock"
	"gpuprep/internal/testroot"
	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
	"gpuprep/lib/topo"
)

const (
	bootA = "5fdd1806-8066-4c6b-9d9e-0a1b2c3d4e5f"
	bootB = "0c2b7e41-1f3a-4b52-8c6d-7e8f90a1b2c3"
)

// setBoot writes the root's /proc/sys/kernel/random/boot_id.
func setBoot(t testing.TB, root, id string) {
	t.Helper()
	p := filepath.Join(root, host.BootIDPath)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(id+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// emptyRoot is a root with only a boot id.
func emptyRoot(t *testing.T) host.Root {
	t.Helper()
	dir := t.TempDir()
	setBoot(t, dir, bootA)
	return host.NewRoot(dir)
}

// settingsOf is what the prolog passes of its configuration.
func settingsOf(c *config.Config) Settings {
	if c == nil {
		return Settings{}
	}
	return Settings{Srunwrap: c.Srunwrap, NCCL: c.NCCL, ConfigFile: c.File}
}

func testConfig(t *testing.T) *config.Config {
	t.Helper()
	c, err := config.Parse("site.toml", []byte(`
[srunwrap]
memory = "preferred"
[srunwrap.checks]
memlock = "refuse"
[[nccl.fabric]]
name = "ib"
env = { NCCL_IB_QPS_PER_CONNECTION = "4" }
`))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A description built on each fixture shape reads back the same, and
// srunwrap's entry gets from it the node it gets from sysfs when the file
// is gone: the same GPUs, NUMA nodes and cores.
func TestRoundTripAndFallback(t *testing.T) {
	for _, shape := range []string{"dgxh100", "gh200", "cloudvm"} {
		t.Run(shape, func(t *testing.T) {
			t.Parallel()
			dir := testroot.Unpack(t, shape)
			setBoot(t, dir, bootA)
			r := host.NewRoot(dir)
			cfg := testConfig(t)
			d, err := Build(r, gpu.OpenProcfs(r), settingsOf(cfg), "1.2.3")
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Node.GPUs) == 0 || len(d.Node.Cores) == 0 || len(d.Node.NUMA) == 0 || d.Node.CPUs != nil {
				t.Fatalf("description: %d GPUs, %d cores, %d NUMA nodes, CPUs %v", len(d.Node.GPUs), len(d.Node.Cores), len(d.Node.NUMA), d.Node.CPUs)
			}
			if d.BootID != bootA || d.Gpuprep != "1.2.3" || d.ConfigFile != "site.toml" || d.Srunwrap.Memory != "preferred" {
				t.Errorf("header %+v", d)
			}
			if err := Write(r, d); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(r.Path(Path))
			if err != nil {
				t.Fatal(err)
			}
			di, _ := os.Stat(r.Path("/run/gpuprep"))
			if fi.Mode().Perm() != 0o644 || di.Mode().Perm() != 0o755 {
				t.Errorf("modes: file %v, dir %v", fi.Mode(), di.Mode())
			}
			got, err := Load(r)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Written.Equal(d.Written) {
				t.Errorf("written %v, read %v", d.Written, got.Written)
			}
			got.Written = d.Written
			if !reflect.DeepEqual(got, d) {
				a, _ := json.Marshal(d)
				b, _ := json.Marshal(got)
				t.Errorf("read back differs:\n%s\n%s", a, b)
			}
			if again, why := NeedsWrite(got, nil, bootA, devices(t, r), settingsOf(cfg), "1.2.3"); again {
				t.Errorf("NeedsWrite right after Write: %s", why)
			}

			node, desc, src, err := ForTask(r)
			if err != nil || desc == nil || !strings.HasPrefix(src, Path+" (boot "+bootA) {
				t.Fatalf("ForTask with a description: %v, %q", err, src)
			}
			if err := os.Remove(r.Path(Path)); err != nil {
				t.Fatal(err)
			}
			fb, fdesc, fsrc, err := ForTask(r)
			if err != nil || fdesc != nil || fsrc != "sysfs (no node description at "+r.Path(Path)+")" {
				t.Fatalf("ForTask without: %v, %q", err, fsrc)
			}
			samePlacement(t, node, fb)
		})
	}
}

func devices(t *testing.T, r host.Root) []gpu.Device {
	t.Helper()
	devs, err := gpu.OpenProcfs(r).Devices()
	if err != nil {
		t.Fatal(err)
	}
	return devs
}

// samePlacement compares what srunwrap places ranks by.
func samePlacement(t *testing.T, desc, sys *topo.Node) {
	t.Helper()
	if !reflect.DeepEqual(desc.NUMA, sys.NUMA) || !reflect.DeepEqual(desc.Cores, sys.Cores) || !reflect.DeepEqual(desc.NICs, sys.NICs) {
		t.Errorf("NUMA, cores or NICs differ between the description and sysfs")
	}
	if len(desc.GPUs) != len(sys.GPUs) {
		t.Fatalf("%d GPUs in the description, %d from sysfs", len(desc.GPUs), len(sys.GPUs))
	}
	for i, g := range desc.GPUs {
		s := sys.GPUs[i]
		if g.UUID != s.UUID || g.BusID != s.BusID || g.Minor != s.Minor || g.NUMA != s.NUMA ||
			!g.CPUAffinity.Equal(s.CPUAffinity) || !g.Cores.Equal(s.Cores) ||
			!reflect.DeepEqual(g.MemoryNUMANodes, s.MemoryNUMANodes) || !reflect.DeepEqual(g.NearNICs, s.NearNICs) {
			t.Errorf("GPU %d: description %+v, sysfs %+v", i, g, s)
		}
	}
}

// The prolog's light backend lists MIG devices without UUIDs; Build asks
// the MIG reader for them, and they are NVML's.
func TestMIGUUIDsFilled(t *testing.T) {
	r := host.NewRoot(testroot.Shared(t, "dgxa100"))
	full, err := gpu.Open("mock:dgxa100", r)
	if err != nil {
		t.Fatal(err)
	}
	want, err := full.Devices()
	if err != nil {
		t.Fatal(err)
	}
	light, err := gpu.Open("mock:dgxa100", r)
	if err != nil {
		t.Fatal(err)
	}
	gpu.Light(light)
	n, err := topo.Discover(r, light, topo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !lacksUUID(n.GPUs[0].MIG.Devices) {
		t.Fatal("the light listing already has MIG UUIDs: the test proves nothing")
	}
	if err := fillMIGUUIDs(n, light); err != nil {
		t.Fatal(err)
	}
	got := n.GPUs[0].MIG.Devices
	if len(got) != 2 || len(want[0].MIG.Devices) != 2 {
		t.Fatalf("MIG devices %+v, want %+v", got, want[0].MIG.Devices)
	}
	for i, m := range got {
		w := want[0].MIG.Devices[i]
		if m.UUID == "" || m.UUID != w.UUID || m.GI != w.GI || m.CI != w.CI || m.GICapMinor != w.GICapMinor || m.CICapMinor != w.CICapMinor {
			t.Errorf("MIG device %d: %+v, want %+v", i, m, w)
		}
	}
	for _, g := range n.GPUs[1:] {
		if len(g.MIG.Devices) != 0 {
			t.Errorf("GPU %d has MIG devices %+v", g.Index, g.MIG.Devices)
		}
	}
}

// writeRaw puts data at Path as the prolog would, 0644.
func writeRaw(t *testing.T, r host.Root, data string) {
	t.Helper()
	p := r.Path(Path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadRefusesWhatCannotBeTrusted(t *testing.T) {
	r := emptyRoot(t)
	if _, err := Load(r); !errors.Is(err, ErrMissing) || !errors.Is(err, fs.ErrNotExist) || err.Error() != r.Path(Path)+": node description missing" {
		t.Errorf("no file: %v", err)
	}
	if err := Write(r, &Description{Version: Version, BootID: bootA}); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(r); err != nil {
		t.Fatalf("fresh: %v", err)
	}
	setBoot(t, r.Dir(), bootB)
	if _, err := Load(r); !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "boot "+bootA) {
		t.Errorf("another boot: %v", err)
	}
	// (The sysfs fallback then fails on this empty root.)
	if _, _, src, _ := ForTask(r); !strings.HasPrefix(src, "sysfs (description stale: written in boot "+bootA) {
		t.Errorf("ForTask on a stale description: %q", src)
	}
	setBoot(t, r.Dir(), bootA)

	writeRaw(t, r, "gpuprep-node-description 3\nboot_id "+bootA+"\ngpus in a new shape\n")
	if _, err := Load(r); !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "format version 3") {
		t.Errorf("other version: %v", err)
	}
	writeRaw(t, r, "gpuprep-node-description 2\nboot_id "+bootA+"\nnuma zero - -\n")
	_, err := Load(r)
	if err == nil || errors.Is(err, ErrStale) || errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), r.Path(Path)) {
		t.Errorf("garbage: %v", err)
	}
	if _, _, src, _ := ForTask(r); !strings.HasPrefix(src, "sysfs (description unreadable: ") {
		t.Errorf("ForTask on garbage: %q", src)
	}
	writeRaw(t, r, `{"version":1,"boot_id":"`+bootA+`"}`)
	if err := os.Chmod(r.Path(Path), 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(r); !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "writable") {
		t.Errorf("world-writable file: %v", err)
	}
}

// A symlink planted at the file or at /run/gpuprep is never written
// through, and the reader does not follow one either.
func TestSymlinksRefused(t *testing.T) {
	d := &Description{Version: Version, BootID: bootA}
	t.Run("file", func(t *testing.T) {
		r := emptyRoot(t)
		victim := filepath.Join(t.TempDir(), "victim")
		os.WriteFile(victim, []byte("keep"), 0o644)
		os.MkdirAll(r.Path("/run/gpuprep"), 0o755)
		if err := os.Symlink(victim, r.Path(Path)); err != nil {
			t.Fatal(err)
		}
		err := Write(r, d)
		if err == nil || !strings.Contains(err.Error(), r.Path(Path)) || !strings.Contains(err.Error(), "symlink") {
			t.Errorf("Write over a symlink: %v", err)
		}
		if b, _ := os.ReadFile(victim); string(b) != "keep" {
			t.Errorf("victim now %q", b)
		}
		if _, err := Load(r); !errors.Is(err, ErrStale) {
			t.Errorf("Load of a symlink: %v", err)
		}
	})
	t.Run("dir", func(t *testing.T) {
		r := emptyRoot(t)
		elsewhere := t.TempDir()
		os.MkdirAll(r.Path("/run"), 0o755)
		if err := os.Symlink(elsewhere, r.Path("/run/gpuprep")); err != nil {
			t.Fatal(err)
		}
		for name, err := range map[string]error{
			"Write":        Write(r, d),
			"WriteNotice":  WriteNotice(r, Notice{Job: 7, Messages: []string{"x"}}),
			"RemoveNotice": RemoveNotice(r, 7),
		} {
			if err == nil || !strings.Contains(err.Error(), r.Path("/run/gpuprep")) || !strings.Contains(err.Error(), "symlink") {
				t.Errorf("%s through a symlinked dir: %v", name, err)
			}
		}
		if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
			t.Errorf("wrote through the link: %v", ents)
		}
	})
}

// Write fixes a directory mode the umask cut and leaves no temporary file.
func TestWriteModesAndNoLeftovers(t *testing.T) {
	r := emptyRoot(t)
	os.MkdirAll(r.Path("/run/gpuprep"), 0o700)
	for range 2 {
		if err := Write(r, &Description{Version: Version, BootID: bootA}); err != nil {
			t.Fatal(err)
		}
	}
	di, _ := os.Stat(r.Path("/run/gpuprep"))
	names, _ := os.ReadDir(r.Path("/run/gpuprep"))
	if di.Mode().Perm() != 0o755 || len(names) != 1 || names[0].Name() != filepath.Base(Path) {
		t.Errorf("dir mode %v, entries %v", di.Mode(), names)
	}
}

// NeedsWrite rewrites the description for every change srunwrap would act
// on, and for nothing else.
func TestNeedsWrite(t *testing.T) {
	devs := testroot.GPUs(t, testroot.Shared(t, "dgxa100")) // GPU 0 has two MIG devices
	cfg := testConfig(t)
	fresh := func() *Description {
		d := &Description{Version: Version, BootID: bootA, Gpuprep: "1.0", Srunwrap: cfg.Srunwrap, NCCL: cfg.NCCL, ConfigFile: cfg.File}
		for _, g := range devs {
			d.Node.GPUs = append(d.Node.GPUs, topo.GPU{Device: g})
		}
		// What Write and Load make of it.
		back, err := decode(Path, encode(d))
		if err != nil {
			t.Fatal(err)
		}
		return back
	}
	if need, why := NeedsWrite(fresh(), nil, bootA, devs, settingsOf(cfg), "1.0"); need {
		t.Fatalf("current description: rewrite because %s", why)
	}
	other := testConfig(t)
	other.NCCL.Fabrics[0].Env["NCCL_IB_QPS_PER_CONNECTION"] = "8"
	for _, tc := range []struct {
		name    string
		change  func(d *Description, devs []gpu.Device) ([]gpu.Device, *config.Config, error, string)
		wantWhy string
	}{
		{"missing", func(d *Description, g []gpu.Device) ([]gpu.Device, *config.Config, error, string) {
			return g, cfg, fmt.Errorf("x: %w", ErrMissing), "1.0"
		}, "missing"},
		{"stale", func(d *Description, g []gpu.Device) ([]gpu.Device, *config.Config, error, string) {
			return g, cfg, fmt.Errorf("x: %w: written in boot", ErrStale), "1.0"
		}, "stale"},
		{"garbage", func(d *Description, g []gpu.Device) ([]gpu.Device, *config.Config, error, string) {
			return g, cfg, errors.New("x: not a node description"), "1.0"
		}, "unreadable"},
		{"boot", func(d *Description, g []gpu.Device) ([]gpu.Device, *config.Config, error, string) {
			d.BootID = bootB
			return g, cfg, nil, "1.0"
		}, "another boot"},
		{"version", func(d *Description, g []gpu.Device) ([]gpu.Device, *config.Config, error, string) {
			return g, cfg, nil, "1.1"
		}, "gpuprep 1.0, this is 1.1"},
		{"gpu gone", func(d *Description, g []gpu.Device) ([]gpu.Device, *config.Config, error, string) {
			return g[1:], cfg, nil, "1.0"
		}, "8 GPUs, now 7"},
		{"gpu replaced", func(d *Description, g []gpu.Device) ([]gpu.Device, *config.Config, error, string) {
			g[3].UUID = "GPU-00000000-0000-0000-0000-000000000000"
			return g, cfg, nil, "1.0"
		}, "GPU 3 was"},
		{"MIG instances", func(d *Description, g []gpu.Device) ([]gpu.Device, *config.Config, error, string) {
			g[0].MIG.Devices = g[0].MIG.Devices[:1]
			return g, cfg, nil, "1.0"
		}, "MIG instances of GPU 0"},
		{"MIG ids", func(d *Description, g []gpu.Device) ([]gpu.Device, *config.Config, error, string) {
			g[0].MIG.Devices[1].GI = 7
			return g, cfg, nil, "1.0"
		}, "MIG instances of GPU 0"},
		{"nccl", func(d *Description, g []gpu.Device) ([]gpu.Device, *config.Config, error, string) {
			return g, other, nil, "1.0"
		}, "[nccl] changed"},
		{"srunwrap", func(d *Description, g []gpu.Device) ([]gpu.Device, *config.Config, error, string) {
			d.Srunwrap.Checks = nil
			return g, cfg, nil, "1.0"
		}, "[srunwrap] changed"},
		{"config file", func(d *Description, g []gpu.Device) ([]gpu.Device, *config.Config, error, string) {
			d.ConfigFile = "/etc/gpuprep/old.toml"
			return g, cfg, nil, "1.0"
		}, "config file /etc/gpuprep/old.toml, now site.toml"},
	} {
		d := fresh()
		g := testroot.GPUs(t, testroot.Shared(t, "dgxa100"))
		g, c, lerr, version := tc.change(d, g)
		need, why := NeedsWrite(d, lerr, bootA, g, settingsOf(c), version)
		if !need || !strings.Contains(why, tc.wantWhy) {
			t.Errorf("%s: NeedsWrite %v %q, want a rewrite because %q", tc.name, need, why, tc.wantWhy)
		}
	}
}
