package grescmd

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gpuprep/internal/testroot"
)

// TestGresGPUsOnBusButNotListed: NVIDIA GPUs on the PCI bus that the
// backend does not list (driver not loaded: auto falls back to none) give
// exit 1 and one line, never a gres.conf without GPUs, whatever the output.
func TestGresGPUsOnBusButNotListed(t *testing.T) {
	root := testroot.Shared(t, "h200x2")
	conf := filepath.Join(t.TempDir(), "gres.conf")
	good, _, _ := gres("--root", root, "--gpu-backend", "procfs")
	os.WriteFile(conf, []byte(good), 0o644)
	for _, args := range [][]string{
		nil, {"--format", "slurm"}, {"--format", "table"}, {"--format", "json"}, {"--json"}, {"--check", conf},
	} {
		out, stderr, code := gres(append([]string{"--root", root, "--gpu-backend", "none"}, args...)...)
		want := "gpuprep-gres: 2 NVIDIA GPUs on the PCI bus but the none backend lists none: neither NVML nor /proc/driver/nvidia answers (is the driver loaded?)\n"
		if code != 1 || out != "" || stderr != want {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1, %q", args, code, out, stderr, want)
		}
	}
	// The procfs backend over a driver directory without GPUs.
	noProc := testroot.Unpack(t, "h200x2")
	os.RemoveAll(filepath.Join(noProc, "proc/driver/nvidia/gpus"))
	os.MkdirAll(filepath.Join(noProc, "proc/driver/nvidia/gpus"), 0o755)
	if _, stderr, code := gres("--root", noProc, "--gpu-backend", "procfs"); code != 1 ||
		stderr != "gpuprep-gres: 2 NVIDIA GPUs on the PCI bus but the procfs backend lists none (is the driver loaded?)\n" {
		t.Errorf("procfs: exit %d, %q", code, stderr)
	}
	// A node without NVIDIA GPUs on the bus still gets its (empty) output.
	noGPU := testroot.Unpack(t, "h200x2")
	for _, bus := range []string{"0000:00:06.0", "0000:00:07.0"} {
		os.WriteFile(filepath.Join(noGPU, "sys/bus/pci/devices", bus, "vendor"), []byte("0x1234\n"), 0o644)
	}
	if out, stderr, code := gres("--root", noGPU, "--gpu-backend", "none"); code != 0 || !strings.Contains(out, "0 GPU records") {
		t.Errorf("no NVIDIA GPU on the bus: exit %d\n%s%s", code, out, stderr)
	}
}

// TestGresCheckSpecialFiles: --check of a FIFO or /dev/zero is refused at
// once (exit 2, one line), not read forever.
func TestGresCheckSpecialFiles(t *testing.T) {
	root := testroot.Shared(t, "h200x2")
	fifo := filepath.Join(t.TempDir(), "gres.fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, "/dev/zero", filepath.Dir(fifo)} {
		type result struct {
			stderr string
			code   int
		}
		done := make(chan result, 1)
		go func() {
			_, stderr, code := gres("--root", root, "--gpu-backend", "procfs", "--check", p)
			done <- result{stderr, code}
		}()
		select {
		case r := <-done:
			if want := "gpuprep-gres: " + p + ": cannot read: not a regular file\n"; r.code != 2 || r.stderr != want {
				t.Errorf("%s: exit %d, %q; want 2, %q", p, r.code, r.stderr, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("--check %s hangs", p)
		}
	}
	big := filepath.Join(t.TempDir(), "big.conf")
	os.WriteFile(big, make([]byte, maxGresConf+1), 0o644)
	if _, stderr, code := gres("--root", root, "--gpu-backend", "procfs", "--check", big); code != 2 || !strings.Contains(stderr, big+": cannot read: larger than 16777216 bytes") {
		t.Errorf("big: exit %d, %q", code, stderr)
	}
}

// TestGresCheckOtherNodesOnly: a gres.conf whose NodeName= lines all name
// other nodes (the usual cause: the full name where the node goes by its
// short one) gets one message naming the file's NodeName= values, this
// node's name and --node-name, not one "missing" line per GPU.
func TestGresCheckOtherNodesOnly(t *testing.T) {
	root := testroot.Shared(t, "h200x2")
	dir := t.TempDir()
	lines := "AutoDetect=off\n" +
		"NodeName=dgx01.example.com Name=gpu Type=nvidia_h200 File=/dev/nvidia0 Cores=0-31\n" +
		"NodeName=dgx01.example.com Name=gpu Type=nvidia_h200 File=/dev/nvidia1 Cores=0-31\n" +
		"NodeName=dgx[02-04] Name=gpu Type=nvidia_h200 File=/dev/nvidia[0-1] Cores=0-31\n"
	conf := filepath.Join(dir, "gres.conf")
	os.WriteFile(conf, []byte(lines), 0o644)
	out, stderr, code := gres("--root", root, "--gpu-backend", "procfs", "--node-name", "dgx01", "--check", conf)
	want := conf + " differs from the hardware in 1 way:\n  no line of " + conf + ` is for this node "dgx01": its NodeName= values are dgx01.example.com, dgx[02-04]; the file names it "dgx01.example.com": run with --node-name dgx01.example.com` + "\n"
	if code != 1 || out != want {
		t.Errorf("exit %d\nstdout: %q\nwant:   %q\nstderr: %s", code, out, want, stderr)
	}
	out, _, code = gres("--root", root, "--gpu-backend", "procfs", "--node-name", "gpu7", "--check", conf)
	if code != 1 || !strings.Contains(out, `this node "gpu7"`) || !strings.Contains(out, "run with --node-name NAME, NAME being what slurm.conf calls this node") || strings.Contains(out, "missing") {
		t.Errorf("no alias: exit %d\n%s", code, out)
	}
	// The name the file uses matches.
	if out, _, code := gres("--root", root, "--gpu-backend", "procfs", "--node-name", "dgx01.example.com", "--check", conf); code != 0 {
		t.Errorf("--node-name dgx01.example.com: exit %d\n%s", code, out)
	}
	// A node named by some line is checked as before: dgx03's lines differ.
	out, _, code = gres("--root", root, "--gpu-backend", "procfs", "--node-name", "dgx03", "--check", conf)
	if code != 0 {
		t.Errorf("dgx03: exit %d\n%s", code, out)
	}
}
