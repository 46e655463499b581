package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// `pkgprep release -version x.y.z [-dry-run]` (make release VERSION=x.y.z
// [DRYRUN=1]) cuts a release. It refuses, with one line saying why:
//
//   - a version that is not x.y.z (semantic versioning, no pre-release or
//     build suffix), not greater than the VERSION file's, or that skips
//     one (the next after 0.1.0 is 0.1.1, 0.2.0 or 1.0.0);
//   - a bump that CHANGELOG.md's [Unreleased] does not allow (its
//     "Versioning" rule): an item marked "**Breaking:**" needs the minor
//     bump while the version is 0.x (the major from 1.0.0 on), and a patch
//     release holds fixes only (### Fixed and ### Security);
//   - a CHANGELOG.md with no item under [Unreleased], a tag vx.y.z that
//     exists, a work tree with changes (git status --porcelain), a git
//     without a committer's name.
//
// Then it moves [Unreleased]'s items under "## [x.y.z] - <today, UTC>"
// (leaving [Unreleased] empty), writes VERSION, commits the two ("Release
// x.y.z") and tags the commit vx.y.z (annotated, with the release's
// notes). -dry-run checks and prints the same, and changes nothing.

// releaseOptions are the release subcommand's flags.
type releaseOptions struct {
	dir     string    // the repository's root
	version string    // the release to cut
	dryRun  bool      // check and print, change nothing
	today   time.Time // the release's date (UTC)
	out     io.Writer // where it says what it does
}

// releaseMain runs `pkgprep release` with args and returns its exit code.
func releaseMain(args []string) int {
	o := releaseOptions{today: time.Now().UTC(), out: os.Stdout}
	fs := flag.NewFlagSet("pkgprep release", flag.ContinueOnError)
	fs.StringVar(&o.dir, "dir", ".", "the repository's root")
	fs.StringVar(&o.version, "version", "", "the release to cut, x.y.z")
	fs.BoolVar(&o.dryRun, "dry-run", false, "check and print what it would do; change nothing")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := cutRelease(o); err != nil {
		fmt.Fprintf(os.Stderr, "release: %v\n", err)
		return 1
	}
	return 0
}

// releasePlan is a release, checked and not yet made.
type releasePlan struct {
	from, to  semver
	bump      string // "major", "minor" or "patch"
	heading   string // "## [x.y.z] - YYYY-MM-DD"
	changelog []byte // CHANGELOG.md with the release cut
	notes     string // the release's section, for the tag's message
	unrel     unreleasedSection
}

// cutRelease checks the release, then makes it, or only prints it with
// -dry-run.
func cutRelease(o releaseOptions) error {
	p, err := planRelease(o)
	if err != nil {
		return err
	}
	printPlan(o.out, p, o.dryRun)
	if o.dryRun {
		fmt.Fprintln(o.out, "release: dry run: nothing changed")
		return nil
	}
	if err := makeRelease(o.dir, p); err != nil {
		return err
	}
	fmt.Fprintf(o.out, "release: committed and tagged v%s; publish it with: git push origin HEAD v%s\n", p.to, p.to)
	return nil
}

// planRelease runs every check and computes the new CHANGELOG.md.
func planRelease(o releaseOptions) (*releasePlan, error) {
	p := &releasePlan{}
	var err error
	if p.from, p.to, err = releaseVersions(o.dir, o.version); err != nil {
		return nil, err
	}
	md, err := os.ReadFile(filepath.Join(o.dir, "CHANGELOG.md"))
	if err != nil {
		return nil, fmt.Errorf("%w", err)
	}
	if p.unrel, err = findUnreleased(md); err != nil {
		return nil, err
	}
	if p.bump, err = checkBump(p.from, p.to, p.unrel); err != nil {
		return nil, err
	}
	if err := checkRepo(o.dir, p.to); err != nil {
		return nil, err
	}
	p.heading = fmt.Sprintf("## [%s] - %s", p.to, o.today.UTC().Format("2006-01-02"))
	p.changelog, p.notes = cutChangelog(md, p.unrel, p.heading)
	return p, checkCut(p)
}

// releaseVersions reads the VERSION file and parses the new version; the
// new one must be greater.
func releaseVersions(dir, version string) (from, to semver, err error) {
	if to, err = parseSemver(version); err != nil {
		return from, to, err
	}
	b, err := os.ReadFile(filepath.Join(dir, "VERSION"))
	if err != nil {
		return from, to, fmt.Errorf("%w", err)
	}
	if from, err = parseSemver(strings.TrimSpace(string(b))); err != nil {
		return from, to, fmt.Errorf("the VERSION file: %w", err)
	}
	if !from.less(to) {
		return from, to, fmt.Errorf("version %s is not greater than the VERSION file's %s", to, from)
	}
	return from, to, nil
}

// checkRepo refuses a tag that exists, a work tree with changes and a git
// that cannot commit (no committer's name or address).
func checkRepo(dir string, to semver) error {
	if _, err := git(dir, "rev-parse", "-q", "--verify", "refs/tags/v"+to.String()); err == nil {
		return fmt.Errorf("the tag v%s exists", to)
	}
	st, err := git(dir, "status", "--porcelain")
	if err != nil {
		return err
	}
	if st = strings.TrimRight(st, "\n"); st != "" {
		n := strings.Count(st, "\n") + 1
		return fmt.Errorf("the work tree has changes (git status --porcelain lists %d, the first %q): commit them or start from a clean checkout", n, strings.SplitN(st, "\n", 2)[0])
	}
	if _, err := git(dir, "var", "GIT_COMMITTER_IDENT"); err != nil {
		return fmt.Errorf("git cannot commit here (set user.name and user.email): %w", err)
	}
	return nil
}

// checkCut proves the new CHANGELOG.md: its newest release is the new
// one with every item [Unreleased] had, and both packages' changelogs
// can be made from it.
func checkCut(p *releasePlan) error {
	rels, err := parseChangelog(p.changelog)
	if err != nil {
		return err
	}
	if len(rels) == 0 || rels[0].version != p.to.String() || len(rels[0].items) != len(p.unrel.items) {
		return fmt.Errorf("CHANGELOG.md: the cut went wrong: the newest release is not %s with %d items", p.to, len(p.unrel.items))
	}
	if _, err := debianChangelog(p.changelog, "gpuprep", p.to.String(), "R <r@example.org>"); err != nil {
		return err
	}
	_, err = rpmChangelog(p.changelog, p.to.String(), "R <r@example.org>")
	return err
}

// printPlan says what the release changes.
func printPlan(w io.Writer, p *releasePlan, dryRun bool) {
	verb := "does"
	if dryRun {
		verb = "would do"
	}
	fmt.Fprintf(w, "release: %s -> %s (%s release); what it %s:\n", p.from, p.to, p.bump, verb)
	fmt.Fprintf(w, "  CHANGELOG.md: [Unreleased]'s %d items (%s) under %q; [Unreleased] left empty\n",
		len(p.unrel.items), p.unrel.summary(), p.heading)
	fmt.Fprintf(w, "  VERSION: %s -> %s\n", p.from, p.to)
	fmt.Fprintf(w, "  git add CHANGELOG.md VERSION && git commit -m %q\n", "Release "+p.to.String())
	fmt.Fprintf(w, "  git tag -a v%s (message: \"gpuprep %s\" and the release's notes)\n", p.to, p.to)
}

// makeRelease writes the files, commits and tags.
func makeRelease(dir string, p *releasePlan) error {
	if err := os.WriteFile(filepath.Join(dir, "CHANGELOG.md"), p.changelog, 0o644); err != nil {
		return fmt.Errorf("%w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "VERSION"), []byte(p.to.String()+"\n"), 0o644); err != nil {
		return fmt.Errorf("%w", err)
	}
	steps := [][]string{
		{"add", "--", "CHANGELOG.md", "VERSION"},
		{"commit", "-q", "-m", "Release " + p.to.String(), "--", "CHANGELOG.md", "VERSION"},
		{"tag", "-a", "--cleanup=whitespace", "v" + p.to.String(), "-m", "gpuprep " + p.to.String() + "\n\n" + p.notes},
	}
	for _, args := range steps {
		if _, err := git(dir, args...); err != nil {
			return fmt.Errorf("%w (CHANGELOG.md and VERSION are written; finish by hand or git reset)", err)
		}
	}
	return nil
}

// git runs git in dir and returns its output; an error carries its
// stderr's first line.
func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		first, _, _ := strings.Cut(strings.TrimSpace(errOut.String()), "\n")
		return "", fmt.Errorf("git %s: %w: %s", args[0], err, first)
	}
	return out.String(), nil
}
