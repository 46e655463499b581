package grescmd

import (
	"strings"
	"testing"

	"gpuprep/internal/testroot"
	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
)

// Links= dropped because auto did not get NVML is one warning line, on
// stderr and in the generated file, naming the backend and why; an explicit
// procfs (the admin's choice), a backend with NVLinks and a single GPU say
// nothing about it.
func TestLinksLeftOutWarning(t *testing.T) {
	root := testroot.Shared(t, "dgxh100")
	want := "gpuprep-gres: warning: Links= left out: GPU backend auto (--gpu-backend) chose procfs, which cannot read NVLinks: auto never uses NVML with --root " + root + " (NVML sees this machine's GPUs, not the root's)\n"
	out, stderr, code := gres("--root", root, "--gpu-backend", "auto")
	if code != 0 || stderr != want {
		t.Errorf("auto: exit %d, stderr\n%q\nwant\n%q", code, stderr, want)
	}
	if regexpMatch(`(?m)^Name=.*Links=`, out) || !strings.Contains(out, "# warning: Links= left out: GPU backend auto") {
		t.Errorf("auto: gres.conf has Links= or lacks the warning:\n%s", out)
	}
	for _, backend := range []string{"procfs", "mock:dgxh100"} {
		if _, stderr, code := gres("--root", root, "--gpu-backend", backend); code != 0 || strings.Contains(stderr, "Links=") {
			t.Errorf("%s: exit %d, stderr %q", backend, code, stderr)
		}
	}
	one := testroot.Shared(t, "h200x1")
	if _, stderr, code := gres("--root", one, "--gpu-backend", "auto"); code != 0 || strings.Contains(stderr, "Links=") {
		t.Errorf("one GPU: exit %d, stderr %q", code, stderr)
	}
}

// On the host, auto's fallback from NVML names NVML's own error, kept from
// auto's one attempt (this machine has no libnvidia-ml), and the fix.
func TestLinksWarningOnHost(t *testing.T) {
	b, err := gpu.Open("auto", host.NewRoot("/"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Name() == "nvml" {
		t.Skip("NVML loads on this machine: auto does not fall back")
	}
	w, ok := linksWarning("auto", "general.gpu_backend", b, host.NewRoot("/"))
	if !ok || !strings.HasPrefix(w.Msg, "Links= left out: GPU backend auto (general.gpu_backend) fell back from NVML to "+b.Name()+", which cannot read NVLinks (NVML: ") ||
		!strings.Contains(w.Fix, "libnvidia-ml.so.1") || strings.Contains(w.String(), "\n") {
		t.Errorf("host: %v %q", ok, w)
	}
	if _, ok := linksWarning("procfs", "--gpu-backend", gpu.OpenProcfs(host.NewRoot("/")), host.NewRoot("/")); ok {
		t.Error("an explicit procfs warns")
	}
}
