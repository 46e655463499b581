package pkgtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRPM: the rpm lists the expected files, requires the glibc its
// programs need at most (2.28 when they come from bin/el8), marks the
// configuration %config(noreplace), installs with rpm --root, keeps an
// edited configuration on upgrade, and its programs run.
func TestRPM(t *testing.T) {
	t.Parallel()
	rpm := need(t, "rpm")[0]
	_, pkg := packages(t)

	want := merge(packagedFiles, rpmOnly)
	listed := map[string]bool{}
	for _, l := range strings.Fields(run(t, rpm, "-qpl", pkg)) {
		listed[l] = true
	}
	for _, p := range sortedKeys(want) {
		if !listed[p] {
			t.Errorf("rpm: %s missing", p)
		}
	}
	for p := range listed {
		if _, ok := want[p]; !ok && !rpmDirs[p] {
			t.Errorf("rpm: unexpected %s", p)
		}
	}
	// rpm -e removes a directory only when a package owns it: gpuprep's
	// own directories are the rpm's.
	for d := range rpmDirs {
		if !listed[d] {
			t.Errorf("rpm: does not own its directory %s", d)
		}
	}

	declared := ""
	for _, r := range strings.Split(run(t, rpm, "-qp", "--requires", pkg), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(r), "glibc >= "); ok {
			declared = v
		}
	}
	if declared == "" {
		t.Fatalf("the rpm requires no glibc >= version")
	}
	if !pkgs.elBin && os.Getenv("CI") == "true" {
		t.Errorf("the rpm's programs are not the EL8 build (packaging/el8/build.sh had no zig): CI=true makes this a failure")
	}
	if pkgs.elBin && declared != "2.28" {
		t.Errorf("built from bin/el8, the rpm requires glibc >= %s, want 2.28", declared)
	}

	flags := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(run(t, rpm, "-qp", "--qf", "[%{FILEFLAGS:fflags} %{FILENAMES}\n]", pkg)), "\n") {
		f, p, _ := strings.Cut(l, " ")
		flags[p] = f
	}
	for _, c := range conffiles {
		if !strings.Contains(flags[c], "c") || !strings.Contains(flags[c], "n") {
			t.Errorf("%s: file flags %q, want config and noreplace (cn)", c, flags[c])
		}
	}
	if cf := strings.Fields(run(t, rpm, "-qp", "--configfiles", pkg)); !contains(cf, conffiles...) {
		t.Errorf("--configfiles %q, want %q among them", cf, conffiles)
	}

	root := t.TempDir()
	run(t, rpm, "--root", root, "--initdb")
	run(t, rpm, "--root", root, "-i", "--nodeps", "--noscripts", pkg)
	for _, p := range sortedKeys(want) {
		fi, err := os.Stat(filepath.Join(root, p))
		if err != nil {
			t.Errorf("after rpm -i: %v", err)
		} else if fi.Mode().Perm() != want[p] {
			t.Errorf("after rpm -i: %s has mode %o, want %o", p, fi.Mode().Perm(), want[p])
		}
	}
	var progs []string
	for _, p := range []string{"usr/sbin/gpuprep-prolog", "usr/sbin/gpuprep-epilog", "usr/sbin/gpuprep-gres", "usr/sbin/gpuprep-health", "usr/bin/srunwrap"} {
		progs = append(progs, filepath.Join(root, p))
	}
	if needs := glibcNeed(t, progs...); versionLess(declared, needs) {
		t.Errorf("the rpm requires glibc >= %s, its programs need GLIBC_%s", declared, needs)
	} else {
		t.Logf("rpm: %s, Requires: glibc >= %s, its programs need GLIBC_%s", sizeOf(t, pkg), declared, needs)
	}
	// This host's glibc is newer than any floor: the programs start.
	if got := strings.TrimSpace(run(t, filepath.Join(root, "usr/sbin/gpuprep-prolog"), "--version")); got != pkgs.versionLine {
		t.Errorf("installed gpuprep-prolog --version: %q, want %q", got, pkgs.versionLine)
	}

	// An admin's edit survives an upgrade (here: the same package again).
	conf := filepath.Join(root, "etc/gpuprep/gpuprep.toml")
	edited := "[general]\nlog_level = \"debug\"\n"
	if err := os.WriteFile(conf, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, rpm, "--root", root, "-U", "--replacepkgs", "--nodeps", "--noscripts", pkg)
	if b, err := os.ReadFile(conf); err != nil || string(b) != edited {
		t.Errorf("after rpm -U the edited %s reads %q (%v)", conf, b, err)
	}
}

func contains(list []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, l := range list {
			found = found || l == w
		}
		if !found {
			return false
		}
	}
	return true
}

// rpmDirs are the directories the rpm owns: gpuprep's own, never the
// system's (/usr/share/doc, /usr/lib/systemd/system...).
var rpmDirs = map[string]bool{
	"/etc/gpuprep":                    true,
	"/usr/lib/gpuprep":                true,
	"/usr/share/doc/gpuprep":          true,
	"/usr/share/doc/gpuprep/docs":     true,
	"/usr/share/doc/gpuprep/examples": true,
	"/usr/share/licenses/gpuprep":     true,
}
