package pkgtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDebInstall installs the deb with dpkg into a minimal Debian 12 and
// a Debian 13 root (debootstrap --variant=minbase, cached by mkroot.sh),
// as on a fresh node: dpkg accepts its Depends, the programs start there
// (their libc is that release's), an edited configuration survives a
// reinstall and a removal, and a purge removes it.
func TestDebInstall(t *testing.T) {
	for _, rel := range []string{"bookworm", "trixie"} {
		t.Run(rel, func(t *testing.T) {
			t.Parallel()
			needRoot(t)
			need(t, "chroot", "debootstrap", "cp")
			deb, _ := packages(t)
			cached := strings.TrimSpace(run(t, "sh", filepath.Join(pkgs.repo, "test/pkgtest/mkroot.sh"), rel))

			// A copy: the cached root stays as debootstrap left it.
			root := filepath.Join(t.TempDir(), "root")
			run(t, "cp", "-a", cached, root)
			if err := os.WriteFile(filepath.Join(root, "tmp/gpuprep.deb"), mustRead(t, deb), 0o644); err != nil {
				t.Fatal(err)
			}
			in := func(args ...string) string { return run(t, "chroot", append([]string{root}, args...)...) }

			in("dpkg", "-i", "/tmp/gpuprep.deb")
			if got := strings.TrimSpace(in("gpuprep-prolog", "--version")); got != pkgs.versionLine {
				t.Errorf("gpuprep-prolog --version in %s: %q, want %q", rel, got, pkgs.versionLine)
			}
			if out := in("gpuprep-gres", "--help"); !strings.Contains(out, "gpuprep-gres") {
				t.Errorf("gpuprep-gres --help in %s: %q", rel, out)
			}
			if out := in("gpuprep-health", "--help"); !strings.Contains(out, "HealthCheckProgram") {
				t.Errorf("gpuprep-health --help in %s: %q", rel, out)
			}
			if out := in("srunwrap", "--version"); !strings.HasPrefix(out, "srunwrap "+pkgs.version) {
				t.Errorf("srunwrap --version in %s: %q", rel, out)
			}
			if out := in("dpkg-query", "-W", "-f", "${Status} ${Version}", "gpuprep"); out != "install ok installed "+pkgs.version {
				t.Errorf("dpkg-query in %s: %q", rel, out)
			}

			// No configuration is shipped: the admin writes one, from the
			// example; dpkg never asks about it and purge removes it.
			conf := filepath.Join(root, "etc/gpuprep/gpuprep.toml")
			if _, err := os.Stat(conf); !os.IsNotExist(err) {
				t.Errorf("the package installed %s (%v): it ships none", conf, err)
			}
			edited := "[general]\nlog_level = \"debug\"\n"
			if err := os.WriteFile(conf, []byte(edited), 0o644); err != nil {
				t.Fatal(err)
			}
			in("dpkg", "-i", "/tmp/gpuprep.deb") // a reinstall, as an upgrade
			if b := mustRead(t, conf); string(b) != edited {
				t.Errorf("the edited gpuprep.toml after a reinstall reads %q", b)
			}
			in("dpkg", "-r", "gpuprep")
			if _, err := os.Stat(filepath.Join(root, "usr/sbin/gpuprep-prolog")); !os.IsNotExist(err) {
				t.Errorf("after dpkg -r, /usr/sbin/gpuprep-prolog: %v", err)
			}
			if b := mustRead(t, conf); string(b) != edited {
				t.Errorf("after dpkg -r, gpuprep.toml reads %q: an admin's file must stay until purge", b)
			}
			left := leaveGpuprepFiles(t, root)
			in("dpkg", "--purge", "gpuprep")
			if found := gpuprepFiles(t, root); len(found) > 0 {
				t.Errorf("after dpkg --purge these gpuprep files remain: %v", found)
			}
			for _, keep := range left.others {
				if _, err := os.Stat(filepath.Join(root, keep)); err != nil {
					t.Errorf("dpkg --purge removed %s, not gpuprep's: %v", keep, err)
				}
			}
		})
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
