package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestParseSemver: x.y.z only; a suffix, a v, leading zeros refused.
func TestParseSemver(t *testing.T) {
	for in, want := range map[string]string{"0.1.0": "0.1.0", "1.22.333": "1.22.333", "10.0.0": "10.0.0"} {
		v, err := parseSemver(in)
		if err != nil || v.String() != want {
			t.Errorf("parseSemver(%q) = %v, %v", in, v, err)
		}
	}
	for in, why := range map[string]string{
		"": "not a semantic", "0.1": "not a semantic", "01.1.0": "not a semantic", "1.2.3.4": "not a semantic",
		"v0.2.0": "without the v", "0.2.0-rc1": "pre-release", "0.2.0+git": "pre-release", "x.y.z": "not a semantic",
		"99999999999999999999.0.0": "out of range",
	} {
		if _, err := parseSemver(in); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("parseSemver(%q): %v, want an error with %q", in, err, why)
		}
	}
}

// TestVersionOrder: numeric, not textual, comparison; 0.x like any other.
func TestVersionOrder(t *testing.T) {
	for _, p := range [][2]string{{"0.1.0", "0.1.1"}, {"0.1.9", "0.1.10"}, {"0.9.0", "0.10.0"}, {"0.99.99", "1.0.0"}, {"1.0.0", "1.0.1"}, {"2.9.9", "10.0.0"}} {
		a, _ := parseSemver(p[0])
		b, _ := parseSemver(p[1])
		if !a.less(b) || b.less(a) || a.less(a) {
			t.Errorf("%s < %s: got %v, reverse %v", a, b, a.less(b), b.less(a))
		}
	}
}

// changelogWith is a CHANGELOG.md whose [Unreleased] holds body, over a
// 0.1.0 release.
func changelogWith(body string) string {
	return "# Changelog\n\nRules.\n\n## [Unreleased]\n\n" + body + "\n## [0.1.0] - 2026-12-02\n\n### Added\n\n- First.\n"
}

// TestCheckBump: the next versions only; breaking items bump the minor on
// 0.x and the major from 1.0.0; patch releases are fixes only.
func TestCheckBump(t *testing.T) {
	const (
		added    = "### Added\n\n- A feature.\n"
		fixed    = "### Fixed\n\n- A fix.\n\n### Security\n\n- A hole closed.\n"
		breaking = "### Changed\n\n- **Breaking:** a key renamed.\n\n### Fixed\n\n- A fix.\n"
		brkFix   = "### Fixed\n\n- **Breaking:** a fix that changes an exit code.\n"
	)
	cases := []struct{ from, to, body, err string }{
		{"0.1.0", "0.1.1", fixed, ""},
		{"0.1.0", "0.2.0", added, ""},
		{"0.1.0", "0.2.0", breaking, ""},
		{"0.1.0", "1.0.0", breaking, ""},
		{"1.4.2", "2.0.0", breaking, ""},
		{"0.1.0", "0.1.1", added, "fixes only"},
		{"0.1.0", "0.1.1", breaking, "bumps the minor: release 0.2.0"},
		{"0.1.0", "0.1.1", brkFix, "bumps the minor"},
		{"1.4.2", "1.5.0", breaking, "bumps the major: release 2.0.0"},
		{"1.4.2", "1.4.3", brkFix, "bumps the major"},
		{"0.1.0", "0.3.0", added, "skips releases: after 0.1.0 comes 0.1.1 (fixes only), 0.2.0 or 1.0.0"},
		{"0.1.0", "0.2.1", added, "skips"},
		{"0.1.0", "2.0.0", added, "skips"},
	}
	for _, c := range cases {
		u, err := findUnreleased([]byte(changelogWith(c.body)))
		if err != nil {
			t.Fatal(err)
		}
		from, _ := parseSemver(c.from)
		to, _ := parseSemver(c.to)
		_, err = checkBump(from, to, u)
		if (c.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s -> %s with %q: %v, want %q", c.from, c.to, c.body, err, c.err)
		}
	}
}

// TestFindUnreleased: items counted by section; an empty [Unreleased] or
// none at all refused.
func TestFindUnreleased(t *testing.T) {
	u, err := findUnreleased([]byte(changelogWith("### Added\n\n- One\n  more.\n- **Breaking:** two.\n\n### Fixed\n\n- Three.\n")))
	if err != nil {
		t.Fatal(err)
	}
	if len(u.items) != 3 || u.breaking() != 1 || u.summary() != "Added 2, Fixed 1; 1 breaking" {
		t.Errorf("items %+v, summary %q", u.items, u.summary())
	}
	for md, why := range map[string]string{
		changelogWith(""):                 "nothing under [Unreleased]",
		changelogWith("### Added\n\n"):    "nothing under [Unreleased]",
		"# Changelog\n\n## [0.1.0] - x\n": "no \"## [Unreleased]\" heading",
	} {
		if _, err := findUnreleased([]byte(md)); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%q: %v, want %q", md, err, why)
		}
	}
}

// TestCutChangelog: [Unreleased]'s content moves under the new heading,
// [Unreleased] stays, empty, and the rest is untouched.
func TestCutChangelog(t *testing.T) {
	md := changelogWith("### Added\n\n- A feature.\n")
	u, err := findUnreleased([]byte(md))
	if err != nil {
		t.Fatal(err)
	}
	got, notes := cutChangelog([]byte(md), u, "## [0.2.0] - 2026-12-06")
	want := "# Changelog\n\nRules.\n\n## [Unreleased]\n\n## [0.2.0] - 2026-12-06\n\n### Added\n\n- A feature.\n\n## [0.1.0] - 2026-12-02\n\n### Added\n\n- First.\n"
	if string(got) != want || notes != "### Added\n\n- A feature." {
		t.Errorf("got\n%s\nwant\n%s\nnotes %q", got, want, notes)
	}
}

// gitRepo makes a repository in a temporary folder with VERSION and
// CHANGELOG.md committed, and returns its path.
func gitRepo(t *testing.T, version, changelog string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	write(t, dir, "VERSION", version+"\n")
	write(t, dir, "CHANGELOG.md", changelog)
	for _, args := range [][]string{
		{"init", "-q"}, {"config", "user.name", "R"}, {"config", "user.email", "r@example.org"},
		{"config", "commit.gpgsign", "false"}, {"config", "tag.gpgsign", "false"},
		{"add", "."}, {"commit", "-q", "-m", "start"},
	} {
		if _, err := git(dir, args...); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func write(t *testing.T, dir, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// releaseIn runs the release in dir and returns what it printed.
func releaseIn(dir, version string, dryRun bool) (string, error) {
	var out bytes.Buffer
	day := time.Date(2026, 12, 6, 23, 30, 0, 0, time.UTC)
	err := cutRelease(releaseOptions{dir: dir, version: version, dryRun: dryRun, today: day, out: &out})
	return out.String(), err
}

// TestReleaseRefuses: each refusal is one line saying why, and changes
// nothing.
func TestReleaseRefuses(t *testing.T) {
	md := changelogWith("### Added\n\n- A feature.\n")
	dir := gitRepo(t, "0.1.0", md)
	for version, why := range map[string]string{
		"0.2":   "not a semantic version",
		"0.1.0": "not greater than the VERSION file's 0.1.0",
		"0.0.9": "not greater",
		"0.1.1": "fixes only",
	} {
		if _, err := releaseIn(dir, version, false); err == nil || !strings.Contains(err.Error(), why) || strings.Contains(err.Error(), "\n") {
			t.Errorf("release %s: %v, want one line with %q", version, err, why)
		}
	}
	write(t, dir, "notes.txt", "untracked\n")
	if _, err := releaseIn(dir, "0.2.0", true); err == nil || !strings.Contains(err.Error(), `work tree has changes (git status --porcelain lists 1, the first "?? notes.txt")`) {
		t.Errorf("a dirty tree: %v", err)
	}
	os.Remove(filepath.Join(dir, "notes.txt"))
	if _, err := git(dir, "tag", "v0.2.0"); err != nil {
		t.Fatal(err)
	}
	if _, err := releaseIn(dir, "0.2.0", false); err == nil || !strings.Contains(err.Error(), "the tag v0.2.0 exists") {
		t.Errorf("an existing tag: %v", err)
	}
	empty := gitRepo(t, "0.1.0", changelogWith(""))
	if _, err := releaseIn(empty, "0.2.0", false); err == nil || !strings.Contains(err.Error(), "nothing under [Unreleased]") {
		t.Errorf("an empty [Unreleased]: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "CHANGELOG.md")); string(b) != md {
		t.Error("a refused release changed CHANGELOG.md")
	}
}

// TestRelease: a dry run changes nothing; the release moves the items,
// writes VERSION, commits both and tags the commit with the notes.
func TestRelease(t *testing.T) {
	md := changelogWith("### Changed\n\n- **Breaking:** a key renamed.\n")
	dir := gitRepo(t, "0.1.0", md)
	out, err := releaseIn(dir, "0.2.0", true)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"0.1.0 -> 0.2.0 (minor release)", `"## [0.2.0] - 2026-12-06"`, "Changed 1; 1 breaking", "dry run: nothing changed"} {
		if !strings.Contains(out, want) {
			t.Errorf("the dry run printed no %q:\n%s", want, out)
		}
	}
	if st, _ := git(dir, "status", "--porcelain"); st != "" {
		t.Errorf("the dry run changed %s", st)
	}
	if _, err := releaseIn(dir, "0.2.0", false); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, args := range [][]string{{"status", "--porcelain"}, {"log", "-1", "--format=%s"}, {"cat-file", "-t", "v0.2.0"},
		{"tag", "-l", "--format=%(contents)", "v0.2.0"}, {"show", "v0.2.0:VERSION"}, {"rev-parse", "v0.2.0^{commit}"}, {"rev-parse", "HEAD"}} {
		o, err := git(dir, args...)
		if err != nil {
			t.Fatal(err)
		}
		got[strings.Join(args, " ")] = strings.TrimSpace(o)
	}
	if got["status --porcelain"] != "" || got["log -1 --format=%s"] != "Release 0.2.0" || got["cat-file -t v0.2.0"] != "tag" ||
		got["show v0.2.0:VERSION"] != "0.2.0" || got["rev-parse v0.2.0^{commit}"] != got["rev-parse HEAD"] ||
		got["tag -l --format=%(contents) v0.2.0"] != "gpuprep 0.2.0\n\n### Changed\n\n- **Breaking:** a key renamed." {
		t.Errorf("after the release: %q", got)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "CHANGELOG.md"))
	if !strings.Contains(string(b), "## [Unreleased]\n\n## [0.2.0] - 2026-12-06\n\n### Changed\n") {
		t.Errorf("CHANGELOG.md:\n%s", b)
	}
	if _, err := releaseIn(dir, "0.2.1", true); err == nil || !strings.Contains(err.Error(), "nothing under [Unreleased]") {
		t.Errorf("right after a release: %v", err)
	}
}
