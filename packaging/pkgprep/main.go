// Command pkgprep prepares what `make package` hands to nfpm
// (packaging/nfpm.yaml), from the built programs and the source tree:
//
//   - it checks that every program to package prints the expected
//     --version (no stale binary in bin/ or bin/el8/);
//   - the glibc each package needs: the highest GLIBC_ symbol version its
//     programs need, as the deb's "libc6 (>= X)"; the rpm declares
//     "glibc >= 2.28" (-rpm-glibc) and pkgprep fails when its programs
//     need more, unless they come from bin/ (then the floor is what they
//     need);
//   - the DEP-5 copyright file, listing the licence of gpuprep and of every
//     Go module compiled into the programs (read from the module cache;
//     nothing is fetched);
//   - the Debian changelog (changelog.gz) and the rpm's (changelog.yml,
//     chglog's YAML) from CHANGELOG.md, the same releases and items, and
//     nfpm-rpm.yaml, the nfpm configuration of the rpm: packaging/nfpm.yaml
//     with "changelog:" naming changelog.yml;
//   - nfpm.env, the variables packaging/nfpm.yaml expands.
//
// Usage (the Makefile's package target runs it):
//
//	go run ./packaging/pkgprep -version 0.1.0 -commit 0123456789ab \
//	    -bin bin -rpm-bin bin/el8 -goroot "$(go env GOROOT)" \
//	    -modcache "$(go env GOMODCACHE)" -out build/pkg
//
// `pkgprep release` cuts a release instead (`make release VERSION=x.y.z`;
// release.go says what it checks and does).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// cgoPrograms link libc; srunwrap is static and the same in both packages.
var cgoPrograms = []string{"gpuprep-prolog", "gpuprep-epilog", "gpuprep-gres", "gpuprep-health"}

const staticProgram = "srunwrap"

type options struct {
	version, commit  string
	bin, rpmBin      string
	goroot, modcache string
	out              string
	rpmGlibc         string
	maintainer       string
	changelog        string
	nfpmConfig       string
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "release" {
		os.Exit(releaseMain(os.Args[2:]))
	}
	var o options
	flag.StringVar(&o.version, "version", "", "the release (the VERSION file)")
	flag.StringVar(&o.commit, "commit", "", "the commit the programs were built from")
	flag.StringVar(&o.bin, "bin", "bin", "folder of the five programs for the deb (and srunwrap for the rpm)")
	flag.StringVar(&o.rpmBin, "rpm-bin", "bin", "folder of the rpm's cgo programs (bin/el8 when built for glibc 2.28)")
	flag.StringVar(&o.goroot, "goroot", "", "GOROOT of the go that built the programs (go env GOROOT)")
	flag.StringVar(&o.modcache, "modcache", "", "the module cache (go env GOMODCACHE)")
	flag.StringVar(&o.out, "out", "build/pkg", "folder to write into")
	flag.StringVar(&o.rpmGlibc, "rpm-glibc", "2.28", "the glibc the rpm declares it needs at least")
	flag.StringVar(&o.maintainer, "maintainer", "", "the packages' maintainer, \"Name <address>\"")
	flag.StringVar(&o.changelog, "changelog", "CHANGELOG.md", "the changelog")
	flag.StringVar(&o.nfpmConfig, "nfpm", "packaging/nfpm.yaml", "the nfpm configuration (the rpm's gets its changelog key)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "pkgprep: %v\n", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.version == "" || o.goroot == "" || o.modcache == "" || o.maintainer == "" {
		return fmt.Errorf("-version, -goroot, -modcache and -maintainer are required")
	}
	debBins := []string{}
	for _, p := range append(cgoPrograms, staticProgram) {
		debBins = append(debBins, filepath.Join(o.bin, p))
	}
	rpmBins := []string{filepath.Join(o.bin, staticProgram)}
	for _, p := range cgoPrograms {
		rpmBins = append(rpmBins, filepath.Join(o.rpmBin, p))
	}
	for _, b := range append(debBins, rpmBins...) {
		if err := checkVersion(b, o.version, o.commit); err != nil {
			return err
		}
	}

	debFloor, debWhy, err := glibcFloor(debBins)
	if err != nil {
		return err
	}
	if debFloor == nil {
		return fmt.Errorf("%s: no GLIBC_ symbol versions found: are these the cgo programs?", o.bin)
	}
	rpmDeclared, err := parseGlibc(o.rpmGlibc)
	if err != nil {
		return err
	}
	rpmFloor, rpmWhy, err := glibcFloor(rpmBins)
	if err != nil {
		return err
	}
	if rpmDeclared.less(rpmFloor) {
		if filepath.Clean(o.rpmBin) != filepath.Clean(o.bin) {
			return fmt.Errorf("the rpm declares glibc >= %s but its programs need %s (%s)", rpmDeclared, rpmFloor, rpmWhy)
		}
		// The rpm is built from bin/ (no EL8 build): it can only say
		// what these programs need.
		fmt.Fprintf(os.Stderr, "pkgprep: warning: %s holds no EL8 build (bash packaging/el8/build.sh): the rpm needs glibc >= %s (%s), so it will not install on EL8\n", o.rpmBin, rpmFloor, rpmWhy)
		rpmDeclared = rpmFloor
	}
	fmt.Fprintf(os.Stderr, "pkgprep: deb: libc6 (>= %s) (%s); rpm: glibc >= %s (its programs need %s)\n", debFloor, debWhy, rpmDeclared, rpmFloor)

	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return fmt.Errorf("%w", err)
	}
	mods, goVersion, err := modulesOf(debBins, o.modcache)
	if err != nil {
		return err
	}
	rpmMods, _, err := modulesOf(rpmBins, o.modcache)
	if err != nil {
		return err
	}
	if len(rpmMods) != len(mods) {
		return fmt.Errorf("the rpm's programs contain %d modules, the deb's %d: were they built from the same tree?", len(rpmMods), len(mods))
	}
	debCopyright, err := copyrightFile(mods, goVersion, o.goroot, "/usr/share/common-licenses/Apache-2.0")
	if err != nil {
		return err
	}
	rpmCopyright, err := copyrightFile(rpmMods, goVersion, o.goroot, "/usr/share/licenses/gpuprep/LICENSE")
	if err != nil {
		return err
	}
	rpmCopyright = withStartFiles(rpmCopyright, o.rpmBin)
	chlogs, err := changelogFiles(o)
	if err != nil {
		return err
	}
	env := fmt.Sprintf("GPUPREP_VERSION=%s\nGPUPREP_DEB_LIBC=%s\nGPUPREP_RPM_GLIBC=%s\nGPUPREP_RPM_BIN=%s\nGPUPREP_BIN=%s\nGPUPREP_WORK=%s\nGPUPREP_MAINTAINER=%s\n",
		shq(o.version), shq("libc6 (>= "+debFloor.String()+")"), shq("glibc >= "+rpmDeclared.String()),
		shq(o.rpmBin), shq(o.bin), shq(o.out), shq(o.maintainer))
	files := map[string][]byte{
		"copyright.deb": []byte(debCopyright),
		"copyright.rpm": []byte(rpmCopyright),
		"nfpm.env":      []byte(env),
	}
	for name, data := range chlogs {
		files[name] = data
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(o.out, name), data, 0o644); err != nil {
			return fmt.Errorf("%w", err)
		}
	}
	return nil
}

// changelogFiles are the packages' changelogs, made from the same
// releases of CHANGELOG.md: the deb's changelog.gz, the rpm's
// changelog.yml, and nfpm-rpm.yaml, the rpm's nfpm configuration that
// names changelog.yml (by its absolute path: nfpm runs in the source tree).
func changelogFiles(o options) (map[string][]byte, error) {
	md, err := os.ReadFile(o.changelog)
	if err != nil {
		return nil, fmt.Errorf("%w", err)
	}
	deb, err := debianChangelog(md, "gpuprep", o.version, o.maintainer)
	if err != nil {
		return nil, err
	}
	debGz, err := gzipN(deb)
	if err != nil {
		return nil, err
	}
	rpm, err := rpmChangelog(md, o.version, o.maintainer)
	if err != nil {
		return nil, err
	}
	conf, err := os.ReadFile(o.nfpmConfig)
	if err != nil {
		return nil, fmt.Errorf("%w", err)
	}
	abs, err := filepath.Abs(filepath.Join(o.out, "changelog.yml"))
	if err != nil {
		return nil, fmt.Errorf("%w", err)
	}
	rpmConf, err := rpmConfig(conf, abs)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{"changelog.gz": debGz, "changelog.yml": rpm, "nfpm-rpm.yaml": rpmConf}, nil
}

// checkVersion runs `bin --version` and compares with what the Makefile
// builds in: a binary left from another build is not packaged.
func checkVersion(bin, version, commit string) error {
	cmd := exec.Command(bin, "--version")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s --version: %w: %s", bin, err, out.String())
	}
	want := filepath.Base(bin) + " " + version
	if commit != "" {
		want += " (commit " + commit + ")"
	}
	if got := strings.TrimSpace(out.String()); got != want {
		return fmt.Errorf("%s --version prints %q, want %q: rebuild it", bin, got, want)
	}
	return nil
}

// shq quotes s for a POSIX shell.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
