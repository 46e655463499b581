package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestDebianChangelog: the changelog.gz the deb carries is CHANGELOG.md's
// releases in Debian's format, newest first, the newest being VERSION; dpkg
// reads it (dpkg-parsechangelog, when installed).
func TestDebianChangelog(t *testing.T) {
	md, err := os.ReadFile("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	vb, err := os.ReadFile("../../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimSpace(string(vb))
	out, err := debianChangelog(md, "gpuprep", version, "A Maintainer <a@example.org>")
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(out), "\n")
	if want := "gpuprep (" + version + ") unstable; urgency=medium"; first != want {
		t.Errorf("first line %q, want %q", first, want)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if len(l) > 80 {
			t.Errorf("line longer than 80 columns: %q", l)
		}
	}
	if _, err := debianChangelog(md, "gpuprep", "99.0.0", "A <a@example.org>"); err == nil {
		t.Error("a VERSION with no CHANGELOG.md entry was accepted")
	}
	if p, err := exec.LookPath("dpkg-parsechangelog"); err == nil {
		f := t.TempDir() + "/changelog"
		if err := os.WriteFile(f, out, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := exec.Command(p, "-l", f, "-S", "Version").CombinedOutput()
		if err != nil || strings.TrimSpace(string(got)) != version {
			t.Errorf("dpkg-parsechangelog: %v: %s", err, got)
		}
	}

	gz, err := gzipN(out)
	if err != nil {
		t.Fatal(err)
	}
	// gzip -9n: no name, no time stamp (the same bytes from the same text).
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	back, _ := io.ReadAll(zr)
	if !bytes.Equal(back, out) || zr.Name != "" || !zr.ModTime.IsZero() {
		t.Errorf("gzip: name %q, mtime %v, round trip ok %v", zr.Name, zr.ModTime, bytes.Equal(back, out))
	}
}
