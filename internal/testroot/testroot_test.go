package testroot

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

type ent struct {
	name, link, data string
	typ              byte
}

func archive(t *testing.T, ents ...ent) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range ents {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Mode: 0o644, ModTime: time.Unix(0, 0)}
		switch e.typ {
		case tar.TypeDir:
			h.Mode = 0o755
		case tar.TypeReg:
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			tw.Write([]byte(e.data))
		}
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

func TestExtractCaptureLayout(t *testing.T) {
	// What capture-root.sh's `tar czf root.tgz -C $R .` produces: "./"
	// prefixes, the root entry, relative and absolute symlinks.
	a := archive(t,
		ent{name: "./", typ: tar.TypeDir},
		ent{name: "./sys/", typ: tar.TypeDir},
		ent{name: "./sys/devices/pci0000:00/0000:00:07.0/vendor", typ: tar.TypeReg, data: "0x10de\n"},
		ent{name: "./sys/bus/pci/devices/0000:00:07.0", typ: tar.TypeSymlink, link: "../../../devices/pci0000:00/0000:00:07.0"},
		ent{name: "./sys/class/misc/abs", typ: tar.TypeSymlink, link: "/etc/passwd"},
		ent{name: "./dev-listing.txt", typ: tar.TypeReg, data: "crw-rw-rw- 1 root root 195, 0 /dev/nvidia0\n"},
	)
	dir := t.TempDir()
	if err := Extract(bytes.NewReader(a), dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "sys/bus/pci/devices/0000:00:07.0/vendor"))
	if err != nil || string(b) != "0x10de\n" {
		t.Fatalf("through the relative link: %q, %v", b, err)
	}
	target, err := os.Readlink(filepath.Join(dir, "sys/class/misc/abs"))
	if err != nil || target != "/etc/passwd" {
		t.Fatalf("absolute link kept as %q, %v", target, err)
	}
}

func TestExtractRefusesEscapes(t *testing.T) {
	cases := map[string][]ent{
		"dotdot":   {{name: "../evil", typ: tar.TypeReg, data: "x"}},
		"nested":   {{name: "sys/../../evil", typ: tar.TypeReg, data: "x"}},
		"absolute": {{name: "/tmp/evil", typ: tar.TypeReg, data: "x"}},
		"through absolute link": {
			{name: "sys/out", typ: tar.TypeSymlink, link: "/tmp"},
			{name: "sys/out/evil", typ: tar.TypeReg, data: "x"},
		},
		"through relative link": {
			{name: "sys/up", typ: tar.TypeSymlink, link: "../.."},
			{name: "sys/up/evil", typ: tar.TypeReg, data: "x"},
		},
		"hard link out": {{name: "sys/h", typ: tar.TypeLink, link: "../../etc/passwd"}},
	}
	for name, ents := range cases {
		parent := t.TempDir()
		dir := filepath.Join(parent, "root")
		os.Mkdir(dir, 0o755)
		if err := Extract(bytes.NewReader(archive(t, ents...)), dir); err == nil {
			t.Errorf("%s: Extract accepted it", name)
		}
		if _, err := os.Lstat(filepath.Join(parent, "evil")); err == nil {
			t.Errorf("%s: wrote outside the root", name)
		}
	}
}

func TestNamesAndUnpack(t *testing.T) {
	names := Names()
	for _, want := range []string{"dgxh100", "dgxa100", "cloudvm", "dgxb200", "gh200"} {
		if !slices.Contains(names, want) {
			t.Errorf("Names() = %v, lacks %s", names, want)
		}
	}
	if !slices.IsSorted(names) {
		t.Errorf("Names() not sorted: %v", names)
	}
	// The smallest generated root, and the captured one when present.
	for _, name := range []string{"cloudvm", "h200x2"} {
		if !slices.Contains(names, name) {
			continue
		}
		dir := Unpack(t, name)
		b, err := os.ReadFile(filepath.Join(dir, "sys/devices/system/cpu/online"))
		if err != nil || !strings.HasPrefix(string(b), "0-") {
			t.Errorf("%s: cpu/online %q, %v", name, b, err)
		}
		ents, err := os.ReadDir(filepath.Join(dir, "sys/bus/pci/devices"))
		if err != nil || len(ents) == 0 {
			t.Errorf("%s: no PCI devices (%v)", name, err)
		}
		for _, e := range ents {
			if _, err := os.Stat(filepath.Join(dir, "sys/bus/pci/devices", e.Name(), "vendor")); err != nil {
				t.Errorf("%s: %s: %v", name, e.Name(), err)
			}
		}
	}
}
