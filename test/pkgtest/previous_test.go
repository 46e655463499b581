package pkgtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// previousRelease is the commit release 0.1.0 is built from (tag v0.1.0):
// the last one whose spool and run directory carry no format file, format
// 0 (lib/state.Format, lib/rundir.Format). Its package shipped
// /etc/gpuprep/gpuprep.toml as a conffile.
const (
	previousRelease = "80c7ca14c9c2f94ee955356c0080dc010b4e6ca4"
	previousVersion = "0.1.0"
)

// buildPrevious builds release 0.1.0's .deb from its commit, in $1 (a
// directory of git archive's files): its programs, man pages, pkgprep's
// files and nfpm's deb, as its `make package` did, without its EL8 rpm
// build (only the deb is installed).
const buildPrevious = `set -e
cd "$1"
make bin/gpuprep-prolog bin/gpuprep-epilog bin/gpuprep-gres bin/gpuprep-health bin/srunwrap man COMMIT=v0.1.0 >build.log 2>&1
go run ./packaging/pkgprep -version 0.1.0 -commit v0.1.0 -bin bin -rpm-bin bin \
	-goroot "$(go env GOROOT)" -modcache "$(go env GOMODCACHE)" \
	-maintainer 'The gpuprep Authors <authors@gpuprep.invalid>' -out pkg >>build.log 2>&1
set -a; . pkg/nfpm.env; set +a
mkdir -p dist
go tool nfpm package -f packaging/nfpm.yaml -p deb -t dist/gpuprep_0.1.0_amd64.deb >>build.log 2>&1
`

var previous struct {
	once sync.Once
	deb  string
	err  error
	out  string
}

// previousDeb is release 0.1.0's .deb, built once per test run from its
// commit in this clone's history (a shallow clone lacks it: a failure, as
// any missing part in CI).
func previousDeb(t *testing.T) string {
	t.Helper()
	need(t, "git", "tar", "make", "go")
	packages(t) // pkgs.dir and pkgs.repo; the current build first
	previous.once.Do(func() {
		if _, _, err := runErr("git", "-C", pkgs.repo, "cat-file", "-e", previousRelease+"^{commit}"); err != nil {
			previous.err = &buildError{err, "release " + previousVersion + "'s commit " + previousRelease + " is not in this clone's history (a shallow clone?): git fetch --unshallow"}
			return
		}
		src := filepath.Join(pkgs.dir, "v"+previousVersion)
		if previous.err = os.MkdirAll(src, 0o755); previous.err != nil {
			return
		}
		archive := exec.Command("sh", "-c", `git -C "$1" archive --format=tar "$2" | tar -x -C "$3"`, "sh", pkgs.repo, previousRelease, src)
		if b, err := archive.CombinedOutput(); err != nil {
			previous.err = &buildError{err, string(b)}
			return
		}
		build := exec.Command("sh", "-c", buildPrevious, "sh", src)
		if b, err := build.CombinedOutput(); err != nil {
			log, _ := os.ReadFile(filepath.Join(src, "build.log"))
			previous.err = &buildError{err, string(b) + string(log)}
			return
		}
		previous.deb = filepath.Join(src, "dist", "gpuprep_"+previousVersion+"_amd64.deb")
	})
	if previous.err != nil {
		t.Fatalf("building release %s: %v", previousVersion, previous.err)
	}
	return previous.deb
}
