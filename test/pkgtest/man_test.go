package pkgtest

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestManPages: each man page in the deb renders with man -l (what `man
// gpuprep-prolog` shows) and groff finds nothing to warn about.
func TestManPages(t *testing.T) {
	t.Parallel()
	tools := need(t, "dpkg-deb", "man", "groff", "zcat")
	dpkgDeb, man, groff, zcat := tools[0], tools[1], tools[2], tools[3]
	deb, _ := packages(t)
	dir := t.TempDir()
	run(t, dpkgDeb, "-x", deb, dir)
	pages, _ := filepath.Glob(filepath.Join(dir, "usr/share/man/man*/*.gz"))
	if len(pages) != 6 {
		t.Fatalf("%d man pages in the deb, want 6: %q", len(pages), pages)
	}
	os.Setenv("MANWIDTH", "80")
	for _, p := range pages {
		name := filepath.Base(p)
		out, errOut, err := runErr(man, "-l", p)
		if err != nil || errOut != "" || !strings.Contains(out, "NAME") || !strings.Contains(out, "SYNOPSIS") && !strings.HasSuffix(name, ".5.gz") {
			t.Errorf("man -l %s: %v, stderr %q, %d bytes out", name, err, errOut, len(out))
		}
		src := filepath.Join(dir, strings.TrimSuffix(name, ".gz"))
		if err := os.WriteFile(src, []byte(run(t, zcat, p)), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, errOut, err := runErr(groff, "-man", "-ww", "-z", "-Tutf8", src); err != nil || errOut != "" {
			t.Errorf("groff -man -ww %s: %v\n%s", name, err, errOut)
		}
	}
}

// TestLogrotate: logrotate reads the packaged rule without error (a dry
// run: -d changes nothing), and the rule applied to a log in a temporary
// folder renames it and creates an empty one, 0640 root:adm, for the next
// hook run to append to.
func TestLogrotate(t *testing.T) {
	logrotate := need(t, "logrotate")[0]
	repo := repoRoot(t)
	state := filepath.Join(t.TempDir(), "state")
	out, errOut, err := runErr(logrotate, "-d", "-s", state, filepath.Join(repo, "packaging/logrotate"))
	if err != nil || strings.Contains(out+errOut, "error:") {
		t.Errorf("logrotate -d: %v\n%s%s", err, out, errOut)
	}
	if !strings.Contains(out+errOut, "/var/log/gpuprep.log") {
		t.Errorf("logrotate -d names no /var/log/gpuprep.log:\n%s%s", out, errOut)
	}

	needRoot(t) // create root:adm
	dir := t.TempDir()
	log := filepath.Join(dir, "gpuprep.log")
	rule := strings.Replace(string(mustRead(t, filepath.Join(repo, "packaging/logrotate"))), "\n/var/log/gpuprep.log {", "\n"+log+" {", 1)
	conf := filepath.Join(dir, "rule")
	if err := os.WriteFile(conf, []byte(rule), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(log, []byte("time=... level=INFO msg=\"prolog done\"\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if out, errOut, err := runErr(logrotate, "-f", "-s", state, conf); err != nil || !strings.Contains(rule, log) {
		t.Fatalf("logrotate -f: %v\n%s%s", err, out, errOut)
	}
	if b := mustRead(t, log+".1"); !strings.Contains(string(b), "prolog done") {
		t.Errorf("rotated log reads %q", b)
	}
	fi, err := os.Stat(log)
	if err != nil {
		t.Fatalf("no new log after rotation: %v", err)
	}
	gid := fi.Sys().(*syscall.Stat_t).Gid
	if fi.Size() != 0 || fi.Mode().Perm() != 0o640 || gid != adm(t) {
		t.Errorf("new log: %d bytes, mode %o, gid %d; want empty, 0640, adm", fi.Size(), fi.Mode().Perm(), gid)
	}
}

// adm is the gid of group adm.
func adm(t *testing.T) uint32 {
	g, err := user.LookupGroup("adm")
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(g.Gid)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(n)
}
