package pkgtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRPMScripts runs the rpm's own scriptlets (as `rpm -qp` prints them)
// with rpm's arguments in a Debian root where the deb put the programs:
// %preun 0 (erase) refuses while a job holds settings and %preun 1 (an
// upgrade) never does; %postun 0 removes what gpuprep left and keeps the
// admin's configuration, %postun 1 removes nothing; %posttrans puts back
// the gpuprep.toml an upgrade from 0.1.0 saved as .rpmsave.
func TestRPMScripts(t *testing.T) {
	needRoot(t)
	rpm := need(t, "rpm", "chroot", "debootstrap", "cp")[0]
	deb, rpmPkg := packages(t)
	cached := strings.TrimSpace(run(t, "sh", filepath.Join(pkgs.repo, "test/pkgtest/mkroot.sh"), "bookworm"))
	n := newDebNode(t, cached, deb, deb)
	scriptlet := func(tag string) string {
		body := run(t, rpm, "-qp", "--queryformat", "%{"+tag+"}", rpmPkg)
		if body == "" || body == "(none)" {
			t.Fatalf("the rpm has no %%%s", strings.ToLower(tag))
		}
		n.write("tmp/"+tag+".sh", body)
		return "/tmp/" + tag + ".sh"
	}
	preun, postun, posttrans := scriptlet("PREUN"), scriptlet("POSTUN"), scriptlet("POSTTRANS")

	n.ok("dpkg", "-i", "/tmp/new.deb")
	n.writeConfig(jobConfig)
	n.ok(n.hook("prolog", "7")...)
	if _, stderr, err := n.in("sh", preun, "0"); err == nil || !strings.Contains(stderr, "jobs still hold settings") {
		t.Errorf("%%preun 0 with job 7 holding settings: %v, stderr %q; want a refusal", err, stderr)
	}
	n.ok("sh", preun, "1") // an upgrade: never refused
	n.ok("gpuprep-epilog", "--root", "/tmp/node", "--gpu-backend", "procfs", "--restore-all", "--force")
	n.ok("sh", preun, "0")

	left := leaveGpuprepFiles(t, n.root)
	n.ok("sh", postun, "1") // an upgrade: nothing goes
	if !n.exists("var/lib/gpuprep/node.json") || !n.exists("var/log/gpuprep.log") {
		t.Errorf("%%postun 1 (an upgrade) removed gpuprep's state or log")
	}
	n.ok("sh", postun, "0")
	for _, gone := range []string{"var/lib/gpuprep", "run/gpuprep", "var/log/gpuprep.log", "var/log/gpuprep.log.1.gz",
		"var/lib/prometheus/node-exporter/gpuprep-prolog.prom", "var/lib/prometheus/node-exporter/gpuprep-health.prom"} {
		if n.exists(gone) {
			t.Errorf("after %%postun 0, /%s is still there", gone)
		}
	}
	for _, keep := range append(left.others, "etc/gpuprep/gpuprep.toml") {
		if !n.exists(keep) {
			t.Errorf("%%postun 0 removed /%s", keep)
		}
	}

	conf := filepath.Join(n.root, "etc/gpuprep/gpuprep.toml")
	if err := os.Rename(conf, conf+".rpmsave"); err != nil {
		t.Fatal(err)
	}
	n.ok("sh", posttrans)
	if got := n.read("etc/gpuprep/gpuprep.toml"); got != jobConfig {
		t.Errorf("%%posttrans did not put back the edited gpuprep.toml saved as .rpmsave: %q", got)
	}
}
