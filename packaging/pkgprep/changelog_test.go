package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/goreleaser/chglog"
	"github.com/goreleaser/nfpm/v2"
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

// twoReleases is a CHANGELOG.md with a versioning rule at the top, an
// [Unreleased] section and two releases, with the Markdown the packaged
// changelogs drop (code quotes, bold) and items of several lines.
const twoReleases = "# Changelog\n\nIntro.\n\n## Versioning\n\n- MAJOR: not an item of a release.\n\n" +
	"## [Unreleased]\n\n### Added\n\n- Not released yet.\n\n" +
	"## [0.2.0] - 2026-12-10\n\n### Changed\n\n" +
	"- **Breaking:** `[isolation] irqs = true` is refused; a long item that\n  goes on over a second line and a third one, to be wrapped by both\n  packagers the same way.\n" +
	"- `gpuprep-health`, a fifth program.\n\n### Fixed\n\n- A fix: \"quoted\" and a backslash \\.\n\n" +
	"## [0.1.0] - 2026-12-02\n\nFirst release.\n\n### Added\n\n- Four programs.\n"

// debEntry is one entry of a Debian changelog as the test reads it.
type debEntry struct {
	version, date string
	items         []string
}

// parseDebianChangelog reads debianChangelog's output: "pkg (v) ..."
// lines, "  * " items with "    " continuation lines, " -- " trailers.
func parseDebianChangelog(t *testing.T, text string) []debEntry {
	t.Helper()
	var es []debEntry
	for _, l := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(l, "gpuprep ("):
			v, _, _ := strings.Cut(strings.TrimPrefix(l, "gpuprep ("), ")")
			es = append(es, debEntry{version: v})
		case strings.HasPrefix(l, "  * "):
			e := &es[len(es)-1]
			e.items = append(e.items, strings.TrimPrefix(l, "  * "))
		case strings.HasPrefix(l, "    "):
			e := &es[len(es)-1]
			e.items[len(e.items)-1] += " " + strings.TrimSpace(l)
		case strings.HasPrefix(l, " -- "):
			_, d, _ := strings.Cut(l, ">  ")
			tm, err := time.Parse(time.RFC1123Z, d)
			if err != nil {
				t.Fatalf("trailer %q: %v", l, err)
			}
			es[len(es)-1].date = tm.UTC().Format(time.RFC3339)
		}
	}
	return es
}

// TestPackagedChangelogsAgree: the deb's changelog and the rpm's (chglog's
// YAML, read as nfpm reads it) list the same releases, newest first, with
// the same dates and items; [Unreleased] and the versioning rule are in
// neither; nfpm's configuration of the rpm names the rpm's changelog.
func TestPackagedChangelogsAgree(t *testing.T) {
	const who = "A Maintainer <a@example.org>"
	deb, err := debianChangelog([]byte(twoReleases), "gpuprep", "0.2.0", who)
	if err != nil {
		t.Fatal(err)
	}
	rpm, err := rpmChangelog([]byte(twoReleases), "0.2.0", who)
	if err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/changelog.yml"
	if err := os.WriteFile(path, rpm, 0o644); err != nil {
		t.Fatal(err)
	}
	rpmEntries, err := chglog.Parse(path)
	if err != nil {
		t.Fatalf("chglog.Parse: %v\n%s", err, rpm)
	}
	debEntries := parseDebianChangelog(t, string(deb))
	if len(debEntries) != 2 || len(rpmEntries) != 2 {
		t.Fatalf("%d deb and %d rpm entries, want 2:\n%s\n%s", len(debEntries), len(rpmEntries), deb, rpm)
	}
	wantItems := [][]string{{
		"Breaking: [isolation] irqs = true is refused; a long item that goes on over a second line and a third one, to be wrapped by both packagers the same way.",
		"gpuprep-health, a fifth program.",
		`A fix: "quoted" and a backslash \.`,
	}, {"Four programs."}}
	for i, want := range []debEntry{{"0.2.0", "2026-12-10T12:00:00Z", wantItems[0]}, {"0.1.0", "2026-12-02T12:00:00Z", wantItems[1]}} {
		d, r := debEntries[i], rpmEntries[i]
		var rItems []string
		for _, c := range r.Changes {
			rItems = append(rItems, strings.Join(strings.Fields(c.Note), " "))
			for _, l := range strings.Split("- "+c.Note, "\n") {
				if len(l) > 78 {
					t.Errorf("rpm: a line of %d columns: %q", len(l), l)
				}
			}
		}
		got := debEntry{r.Semver, r.Date.UTC().Format(time.RFC3339), rItems}
		if !reflect.DeepEqual(d, want) || !reflect.DeepEqual(got, want) {
			t.Errorf("entry %d:\n deb %+v\n rpm %+v\nwant %+v", i, d, got, want)
		}
		if r.Packager != who {
			t.Errorf("rpm entry %d: packager %q", i, r.Packager)
		}
	}
	if _, err := rpmChangelog([]byte(twoReleases), "0.3.0", who); err == nil {
		t.Error("rpmChangelog: a VERSION with no CHANGELOG.md entry was accepted")
	}
}

// TestRPMConfig: the rpm's nfpm configuration is packaging/nfpm.yaml with
// the changelog key, which nfpm reads (and the deb's has none); a
// configuration that sets the key itself is refused.
func TestRPMConfig(t *testing.T) {
	base, err := os.ReadFile("../../packaging/nfpm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	conf, err := rpmConfig(base, dir+"/changelog.yml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := nfpm.Parse(bytes.NewReader(conf))
	if err != nil {
		t.Fatalf("nfpm cannot parse the rpm's configuration: %v", err)
	}
	if info, _ := cfg.Get("rpm"); info.Changelog != dir+"/changelog.yml" {
		t.Errorf("the rpm's changelog is %q", info.Changelog)
	}
	debCfg, err := nfpm.Parse(bytes.NewReader(base))
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := debCfg.Get("deb"); info.Changelog != "" {
		t.Errorf("packaging/nfpm.yaml sets changelog %q: the deb would get changelog.Debian.gz", info.Changelog)
	}
	if _, err := rpmConfig(conf, dir+"/changelog.yml"); err == nil {
		t.Error("a configuration with a changelog key was accepted")
	}
}

// An item with a word no changelog line can hold is refused with the
// release and the word, never written as a line lintian warns about.
func TestChangelogWordTooWide(t *testing.T) {
	md := []byte("# Changelog\n\n## [0.2.0] - 2026-12-06\n\n### Added\n\n- Counters `gpuprep_job_gpu_{jobs,seconds,energy_joules,energy_unknown_jobs,throttle_seconds}_total`.\n")
	_, err := debianChangelog(md, "gpuprep", "0.2.0", "A <a@example.org>")
	if err == nil || !strings.Contains(err.Error(), "[0.2.0]") || !strings.Contains(err.Error(), "split it") {
		t.Errorf("a word of 86 columns: %v; want a refusal naming the release", err)
	}
}
