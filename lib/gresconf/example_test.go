package gresconf

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"gpuprep/lib/cpuset"
)

// TestDGXH100SiteFile reads a site-wide gres.conf for DGX H100 nodes
// (testdata/dgx-h100.gres.conf) and checks what each kind of node gets.
func TestDGXH100SiteFile(t *testing.T) {
	data, err := os.ReadFile("testdata/dgx-h100.gres.conf")
	if err != nil {
		t.Fatal(err)
	}
	g, err := Parse("dgx-h100.gres.conf", data)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Warnings) != 0 {
		t.Errorf("warnings: %v", g.Warnings)
	}
	if g.AutoDetect != "off" {
		t.Errorf("AutoDetect = %q", g.AutoDetect)
	}

	// A regular node: 8 GPUs in minor order, NVLink rows, cores per socket,
	// then 8 MPS records of 100, then the bandwidth tokens.
	devs := g.ForNode("dgx007")
	if len(devs) != 17 {
		t.Fatalf("dgx007: %d records, want 17: %+v", len(devs), devs)
	}
	s0, s1 := cpuset.Range(0, 55), cpuset.Range(56, 111)
	for i := 0; i < 8; i++ {
		d := devs[i]
		wantCores := s0
		if i >= 4 {
			wantCores = s1
		}
		links := []int{18, 18, 18, 18, 18, 18, 18, 18}
		links[i] = -1
		want := Device{Name: "gpu", Type: "h100", File: "/dev/nvidia" + string(rune('0'+i)),
			Cores: wantCores, HasCores: true, Links: links, Count: 1, Line: 10 + i}
		if !reflect.DeepEqual(d, want) {
			t.Errorf("dgx007 gpu %d:\n got %+v\nwant %+v", i, d, want)
		}
	}
	for i := 8; i < 16; i++ {
		if d := devs[i]; d.Name != "mps" || d.Count != 100 || d.File != "/dev/nvidia"+string(rune('0'+i-8)) {
			t.Errorf("dgx007 mps record %d: %+v", i-8, d)
		}
	}
	if d := devs[16]; d.Name != "bandwidth" || d.Type != "lustre" || d.Count != 4<<30 || !reflect.DeepEqual(d.Flags, []string{"CountOnly"}) {
		t.Errorf("bandwidth: %+v", d)
	}

	// dgx032 lost minor 5: seven GPUs from three lines (one lower-case,
	// one continued over three physical lines), no Links.
	devs = g.ForNode("dgx032")
	var files []string
	for _, d := range devs {
		if d.Name == "gpu" {
			files = append(files, d.File)
			if d.Links != nil {
				t.Errorf("dgx032 %s has Links", d.File)
			}
		}
	}
	wantFiles := []string{"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2", "/dev/nvidia3", "/dev/nvidia4", "/dev/nvidia6", "/dev/nvidia7"}
	if !reflect.DeepEqual(files, wantFiles) {
		t.Errorf("dgx032 GPU files %q, want %q", files, wantFiles)
	}
	if last := devs[6]; last.Line != 22 || !last.Cores.Equal(s1) {
		t.Errorf("dgx032 continued line: %+v", last)
	}
	if len(devs) != 8 { // 7 GPUs, no MPS, bandwidth
		t.Errorf("dgx032: %d records", len(devs))
	}

	// MIG nodes: four 3g.40gb instances as MultipleFiles.
	devs = g.ForNode("dgxmig2")
	if len(devs) != 5 {
		t.Fatalf("dgxmig2: %d records", len(devs))
	}
	wantMIG := [][]string{
		{"/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap12", "/dev/nvidia-caps/nvidia-cap13"},
		{"/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap21", "/dev/nvidia-caps/nvidia-cap22"},
		{"/dev/nvidia1", "/dev/nvidia-caps/nvidia-cap147", "/dev/nvidia-caps/nvidia-cap148"},
		{"/dev/nvidia1", "/dev/nvidia-caps/nvidia-cap156", "/dev/nvidia-caps/nvidia-cap157"},
	}
	for i, w := range wantMIG {
		d := devs[i]
		if d.Type != "h100_3g.40gb" || d.File != "" || d.Count != 1 || !reflect.DeepEqual(d.MultipleFiles, w) {
			t.Errorf("dgxmig2 MIG %d: %+v", i, d)
		}
	}

	// The test node autodetects; other nodes are off; a node the file does
	// not name still gets the global bandwidth line.
	for host, want := range map[string]string{"dgxtest01": "nvml", "dgx001": "off", "login1": "off"} {
		if got, err := g.AutoDetectFor(host); err != nil || got != want {
			t.Errorf("AutoDetectFor(%s) = %q, %v; want %q", host, got, err, want)
		}
	}
	if devs := g.ForNode("dgxtest01"); len(devs) != 1 || devs[0].Name != "bandwidth" {
		t.Errorf("dgxtest01: %+v", devs)
	}
	if devs := g.ForNode("dgx065"); len(devs) != 1 {
		t.Errorf("dgx065 is outside every NodeName range: %+v", devs)
	}

	// The same file with CRLF endings reads the same.
	crlf := strings.ReplaceAll(string(data), "\n", "\r\n")
	g2, err := Parse("dgx-h100.gres.conf", []byte(crlf))
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"dgx007", "dgx032", "dgxmig1", "dgxtest01"} {
		if !reflect.DeepEqual(g.ForNode(host), g2.ForNode(host)) {
			t.Errorf("%s differs with CRLF endings", host)
		}
	}
}
