package grescmd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpuprep/internal/testroot"
	"gpuprep/lib/gresconf"
	"gpuprep/lib/gresgen"
)

// --node-name-lines: every line names the node, so one gres.conf can hold
// several nodes (configless Slurm); Slurm's parser rules give the node the
// same records and AutoDetect=off, and other nodes nothing.
func TestGresNodeNameLines(t *testing.T) {
	root := testroot.Shared(t, "h200x2")
	plain, stderr, code := gres("--root", root, "--gpu-backend", "procfs", "--node-name", "gpu07")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	shared, stderr, code := gres("--root", root, "--gpu-backend", "procfs", "--node-name", "gpu07", "--node-name-lines")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	n := 0
	for _, l := range strings.Split(strings.TrimSpace(shared), "\n") {
		if strings.HasPrefix(l, "#") {
			continue
		}
		n++
		if !strings.HasPrefix(l, "NodeName=gpu07 ") {
			t.Errorf("line without NodeName=gpu07: %q", l)
		}
	}
	if n != 3 || !strings.Contains(shared, "NodeName=gpu07 AutoDetect=off\n") {
		t.Errorf("%d lines:\n%s", n, shared)
	}
	// Two nodes' files concatenated, as a shared gres.conf.
	other := strings.ReplaceAll(shared, "NodeName=gpu07 ", "NodeName=gpu08 ")
	sc, err := gresconf.Parse("shared", []byte(shared+other))
	if err != nil {
		t.Fatal(err)
	}
	pc, err := gresconf.Parse("plain", []byte(plain))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(sc.ForNode("gpu07")), fmt.Sprint(pc.ForNode("gpu07")); got != want || len(pc.ForNode("gpu07")) != 2 {
		t.Errorf("gpu07 gets\n%s\nwant\n%s", got, want)
	}
	if len(sc.ForNode("gpu09")) != 0 {
		t.Errorf("gpu09 gets %v", sc.ForNode("gpu09"))
	}
	for host, want := range map[string]string{"gpu07": "off", "gpu08": "off", "gpu09": ""} {
		if ad, err := sc.AutoDetectFor(host); err != nil || ad != want {
			t.Errorf("AutoDetect for %s: %q %v, want %q", host, ad, err, want)
		}
	}
	// --check reads it as this node's gres.conf.
	file := filepath.Join(t.TempDir(), "gres.conf")
	os.WriteFile(file, []byte(shared+other), 0o644)
	if out, stderr, code := gres("--root", root, "--gpu-backend", "procfs", "--node-name", "gpu07", "--check", file); code != 0 {
		t.Errorf("--check of the shared file: %d\n%s%s", code, out, stderr)
	}
}

func TestGresHelp(t *testing.T) {
	for _, arg := range []string{"-h", "--help"} {
		out, stderr, code := gres(arg)
		if code != 0 || !strings.HasPrefix(out, "usage: gpuprep-gres") || !strings.Contains(out, "--node-name-lines") || stderr != "" {
			t.Errorf("%s: exit %d stdout %q stderr %q", arg, code, out, stderr)
		}
	}
}

func TestCheckReportPlural(t *testing.T) {
	for n, want := range map[int]string{1: "in 1 way:", 2: "in 2 ways:"} {
		var b bytes.Buffer
		report(&b, "g.conf", make([]gresgen.Difference, n), false)
		if !strings.Contains(b.String(), "g.conf differs from the hardware "+want) {
			t.Errorf("%d differences: %q", n, b.String())
		}
	}
}
