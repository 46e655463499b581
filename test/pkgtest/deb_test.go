package pkgtest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestDebContents: the deb holds exactly the expected files, root's, with
// their modes; its conffiles are the configuration and the logrotate rule;
// it depends on the libc6 its programs need (objdump -T agrees).
func TestDebContents(t *testing.T) {
	t.Parallel()
	dpkgDeb := need(t, "dpkg-deb")[0]
	deb, _ := packages(t)

	want := merge(packagedFiles, debOnly)
	got := map[string]os.FileMode{}
	for _, l := range strings.Split(strings.TrimSpace(run(t, dpkgDeb, "-c", deb)), "\n") {
		f := strings.Fields(l) // -rwxr-xr-x root/root 11163360 2026-12-02 06:39 ./usr/sbin/gpuprep-epilog
		if len(f) < 6 || strings.HasSuffix(f[5], "/") {
			continue
		}
		if f[1] != "root/root" {
			t.Errorf("%s is owned by %s, want root/root", f[5], f[1])
		}
		got[strings.TrimPrefix(f[5], ".")] = modeOf(f[0])
	}
	for _, p := range sortedKeys(want) {
		if m, ok := got[p]; !ok {
			t.Errorf("deb: %s missing", p)
		} else if m != want[p] {
			t.Errorf("deb: %s has mode %o, want %o", p, m, want[p])
		}
	}
	for _, p := range sortedKeys(got) {
		if _, ok := want[p]; !ok {
			t.Errorf("deb: unexpected %s", p)
		}
	}

	cf := strings.Fields(run(t, dpkgDeb, "-I", deb, "conffiles"))
	if strings.Join(cf, " ") != strings.Join(conffiles, " ") {
		t.Errorf("conffiles %q, want %q", cf, conffiles)
	}
	if v := strings.TrimSpace(run(t, dpkgDeb, "-f", deb, "Version")); v != pkgs.version {
		t.Errorf("Version %q, want %q (the VERSION file)", v, pkgs.version)
	}

	dir := t.TempDir()
	run(t, dpkgDeb, "-x", deb, dir)
	var progs []string
	for _, p := range []string{"usr/sbin/gpuprep-prolog", "usr/sbin/gpuprep-epilog", "usr/sbin/gpuprep-gres", "usr/sbin/gpuprep-health", "usr/bin/srunwrap"} {
		progs = append(progs, filepath.Join(dir, p))
	}
	needs := glibcNeed(t, progs...)
	dep := strings.TrimSpace(run(t, dpkgDeb, "-f", deb, "Depends"))
	if want := "libc6 (>= " + needs + ")"; dep != want {
		t.Errorf("Depends: %q, but the programs need GLIBC_%s: want %q", dep, needs, want)
	}
	t.Logf("deb: %s, Depends: %s", sizeOf(t, deb), dep)
}

// TestLintian: lintian finds no error and no warning in the deb
// (packaging/lintian-overrides says why each override is there).
func TestLintian(t *testing.T) {
	t.Parallel()
	lintian := need(t, "lintian")[0]
	deb, _ := packages(t)
	out, errOut, err := runErr(lintian, "--tag-display-limit", "0", deb)
	t.Logf("lintian:\n%s%s", out, errOut)
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "E: ") || strings.HasPrefix(l, "W: ") {
			t.Errorf("lintian: %s", l)
		}
	}
	// lintian exits non-zero on errors only (and on its own failure).
	if err != nil && !strings.Contains(out, "E: ") {
		t.Errorf("lintian failed: %v", err)
	}
}

// modeOf reads "-rwxr-xr-x" as 0755.
func modeOf(s string) os.FileMode {
	var m os.FileMode
	for i, c := range s[1:10] {
		if c != '-' {
			m |= 1 << (8 - i)
		}
	}
	return m
}

func sizeOf(t *testing.T, path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return strconv.FormatFloat(float64(fi.Size())/(1<<20), 'f', 1, 64) + " MiB"
}
