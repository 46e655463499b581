package gpu

import (
	"os"
	"path/filepath"
	"testing"

	"gpuprep/lib/host"
)

// writeRoot makes a root in a temp folder holding files (node path ->
// content); a path ending in "/" makes a folder.
func writeRoot(t *testing.T, files map[string]string) host.Root {
	t.Helper()
	dir := t.TempDir()
	for p, content := range files {
		full := filepath.Join(dir, p)
		if p[len(p)-1] == '/' {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return host.NewRoot(dir)
}

// information is an information file as driver 580 writes it (tabs and
// spaces as on the 2x H200 node).
func information(model, uuid, bus string, minor string) string {
	return "Model: \t\t " + model + "\n" +
		"IRQ:   \t\t 41\n" +
		"GPU UUID: \t " + uuid + "\n" +
		"Video BIOS: \t 96.00.a5.00.1a\n" +
		"Bus Type: \t PCIe\n" +
		"DMA Size: \t 52 bits\n" +
		"DMA Mask: \t 0xfffffffffffff\n" +
		"Bus Location: \t " + bus + "\n" +
		"Device Minor: \t " + minor + "\n" +
		"GPU Firmware: \t 580.159.04\n" +
		"GPU Excluded:\t No\n"
}
