package pkgtest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"gpuprep/internal/testroot"
)

// need returns the path of each tool; a missing one skips the test, or
// fails it in CI (CI=true).
func need(t *testing.T, tools ...string) []string {
	t.Helper()
	var paths []string
	for _, tool := range tools {
		p, err := exec.LookPath(tool)
		if err != nil {
			for _, dir := range []string{"/usr/sbin", "/sbin"} {
				if _, serr := os.Stat(filepath.Join(dir, tool)); serr == nil {
					p, err = filepath.Join(dir, tool), nil
				}
			}
		}
		if err != nil {
			missing(t, tool+" not found (test/install-deps.sh installs it)")
		}
		paths = append(paths, p)
	}
	return paths
}

// needRoot: chroot, dpkg in a root and debootstrap need root.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		missing(t, "needs root")
	}
}

func missing(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s; CI=true makes this a failure", why)
	}
	t.Skip(why)
}

// run runs name with args and returns its stdout; it fails the test when
// the command fails, with its stderr.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, errOut, err := runErr(name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, errOut)
	}
	return out
}

func runErr(name string, args ...string) (stdout, stderr string, err error) {
	cmd := exec.Command(name, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

func repoRoot(t *testing.T) string {
	return testroot.Module(t)
}

// pkgs is the one build of the packages all tests share.
var pkgs struct {
	once        sync.Once
	dir         string // temporary: dist/, pkg/
	deb, rpm    string
	version     string // the VERSION file
	versionLine string // what bin/gpuprep-prolog --version prints
	elBin       bool   // the rpm's cgo programs came from bin/el8
	repo        string
	err         error
	buildOut    string
}

// TestMain removes the packages built (some 25 MB) when the tests end.
func TestMain(m *testing.M) {
	code := m.Run()
	if pkgs.dir != "" {
		os.RemoveAll(pkgs.dir)
	}
	os.Exit(code)
}

// packages builds the .deb and .rpm once per test run with `make package`
// (it rebuilds bin/ and the man pages, as a release does), into a
// temporary folder.
func packages(t *testing.T) (deb, rpm string) {
	t.Helper()
	need(t, "make")
	pkgs.once.Do(func() {
		pkgs.repo, pkgs.err = testroot.ModuleRoot()
		if pkgs.err != nil {
			return
		}
		v, err := os.ReadFile(filepath.Join(pkgs.repo, "VERSION"))
		if err != nil {
			pkgs.err = err
			return
		}
		pkgs.version = strings.TrimSpace(string(v))
		if pkgs.dir, pkgs.err = os.MkdirTemp("", "gpuprep-pkgtest-"); pkgs.err != nil {
			return
		}
		cmd := exec.Command("make", "-C", pkgs.repo, "package", "DIST="+pkgs.dir+"/dist", "PKGBUILD="+pkgs.dir+"/pkg")
		b, err := cmd.CombinedOutput()
		pkgs.buildOut = string(b)
		if err != nil {
			pkgs.err = &buildError{err, string(b)}
			return
		}
		pkgs.deb = filepath.Join(pkgs.dir, "dist", "gpuprep_"+pkgs.version+"_amd64.deb")
		pkgs.rpm = filepath.Join(pkgs.dir, "dist", "gpuprep-"+pkgs.version+"-1.x86_64.rpm")
		out, _, err := runErr(filepath.Join(pkgs.repo, "bin", "gpuprep-prolog"), "--version")
		if err != nil {
			pkgs.err = err
			return
		}
		pkgs.versionLine = strings.TrimSpace(out)
		env, err := os.ReadFile(filepath.Join(pkgs.dir, "pkg", "nfpm.env"))
		pkgs.err = err
		pkgs.elBin = strings.Contains(string(env), "GPUPREP_RPM_BIN='bin/el8'")
	})
	if pkgs.err != nil {
		t.Fatal(pkgs.err)
	}
	return pkgs.deb, pkgs.rpm
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return "make package: " + e.err.Error() + "\n" + e.out }

// packagedFiles are the files both packages install, with their modes
// (the rpm also has /usr/share/licenses/gpuprep/LICENSE, the deb the
// Debian changelog and lintian's overrides).
var packagedFiles = map[string]os.FileMode{
	"/usr/sbin/gpuprep-prolog":                              0o755,
	"/usr/sbin/gpuprep-epilog":                              0o755,
	"/usr/sbin/gpuprep-gres":                                0o755,
	"/usr/sbin/gpuprep-health":                              0o755,
	"/usr/bin/srunwrap":                                     0o755,
	"/etc/logrotate.d/gpuprep":                              0o644,
	"/usr/lib/tmpfiles.d/gpuprep.conf":                      0o644,
	"/usr/lib/gpuprep/irqbalance-policy":                    0o755,
	"/usr/lib/systemd/system/gpuprep-probe.service":         0o644,
	"/usr/lib/systemd/system/gpuprep-probe.timer":           0o644,
	"/usr/lib/systemd/system/gpuprep-health.service":        0o644,
	"/usr/lib/systemd/system/gpuprep-health.timer":          0o644,
	"/usr/share/man/man1/srunwrap.1.gz":                     0o644,
	"/usr/share/bash-completion/completions/gpuprep-prolog": 0o644,
	"/usr/share/bash-completion/completions/gpuprep-epilog": 0o644,
	"/usr/share/bash-completion/completions/gpuprep-health": 0o644,
	"/usr/share/bash-completion/completions/gpuprep-gres":   0o644,
	"/usr/share/bash-completion/completions/srunwrap":       0o644,
	"/usr/share/man/man5/gpuprep.toml.5.gz":                 0o644,
	"/usr/share/man/man8/gpuprep-prolog.8.gz":               0o644,
	"/usr/share/man/man8/gpuprep-epilog.8.gz":               0o644,
	"/usr/share/man/man8/gpuprep-gres.8.gz":                 0o644,
	"/usr/share/man/man8/gpuprep-health.8.gz":               0o644,
	"/usr/share/doc/gpuprep/copyright":                      0o644,
	"/usr/share/doc/gpuprep/README.md":                      0o644,
	"/usr/share/doc/gpuprep/CHANGELOG.md":                   0o644,
	"/usr/share/doc/gpuprep/docs/admin.md":                  0o644,
	"/usr/share/doc/gpuprep/docs/users.md":                  0o644,
	"/usr/share/doc/gpuprep/docs/oncall.md":                 0o644,
	"/usr/share/doc/gpuprep/docs/COMPATIBILITY.md":          0o644,
	"/usr/share/doc/gpuprep/examples/slurm.conf.fragment":   0o644,
	"/usr/share/doc/gpuprep/examples/gpuprep.toml":          0o644,
	"/usr/share/doc/gpuprep/examples/health-models.toml":    0o644,
	"/usr/share/doc/gpuprep/examples/taskprolog.sh":         0o644,
	"/usr/share/doc/gpuprep/examples/gres.conf.mistakes":    0o644,
}

var debOnly = map[string]os.FileMode{
	"/usr/share/doc/gpuprep/changelog.gz":  0o644,
	"/usr/share/lintian/overrides/gpuprep": 0o644,
}

var rpmOnly = map[string]os.FileMode{
	"/usr/share/licenses/gpuprep/LICENSE": 0o644,
}

// conffiles are the files the package manager keeps once the admin edited
// them. gpuprep.toml is not one: a missing file is the built-in defaults,
// and the admin writes their own from the example under /usr/share/doc.
var conffiles = []string{"/etc/logrotate.d/gpuprep"}

func merge(a, b map[string]os.FileMode) map[string]os.FileMode {
	m := map[string]os.FileMode{}
	for k, v := range a {
		m[k] = v
	}
	for k, v := range b {
		m[k] = v
	}
	return m
}

func sortedKeys(m map[string]os.FileMode) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// glibcNeed is the highest GLIBC_x.y version the ELF files need, from
// `objdump -T` (a second opinion beside packaging/pkgprep's debug/elf).
func glibcNeed(t *testing.T, files ...string) string {
	t.Helper()
	objdump := need(t, "objdump")[0]
	best := ""
	for _, f := range files {
		out, errOut, err := runErr(objdump, "-T", f)
		if err != nil && strings.Contains(errOut, "not a dynamic object") {
			continue // static (srunwrap): no libc
		} else if err != nil {
			t.Fatalf("objdump -T %s: %v\n%s", f, err, errOut)
		}
		for _, l := range strings.Split(out, "\n") {
			i := strings.Index(l, "GLIBC_")
			if i < 0 || !strings.Contains(l, "*UND*") {
				continue
			}
			v := strings.Fields(l[i+len("GLIBC_"):])[0]
			v = strings.TrimRight(v, ")")
			if v[0] >= '0' && v[0] <= '9' && (best == "" || versionLess(best, v)) {
				best = v
			}
		}
	}
	return best
}

// versionLess compares dotted numbers: "2.5" < "2.28".
func versionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		var x, y int
		for _, c := range as[i] {
			x = x*10 + int(c-'0')
		}
		for _, c := range bs[i] {
			y = y*10 + int(c-'0')
		}
		if x != y {
			return x < y
		}
	}
	return len(as) < len(bs)
}
