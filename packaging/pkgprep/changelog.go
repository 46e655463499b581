package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// release is one "## [x.y.z] - YYYY-MM-DD" section of CHANGELOG.md (Keep a
// Changelog): its version, date and the "- " items under it.
type release struct {
	version string
	date    time.Time
	items   []string
}

var releaseHeading = regexp.MustCompile(`^## \[([0-9][^\]]*)\] - (\d{4}-\d{2}-\d{2})\s*$`)

// parseChangelog reads the released sections of CHANGELOG.md, newest first
// ([Unreleased] is skipped). An item's continuation lines are joined.
func parseChangelog(md []byte) ([]release, error) {
	var rels []release
	sc := bufio.NewScanner(bytes.NewReader(md))
	inRelease := false
	for sc.Scan() {
		line := sc.Text()
		if m := releaseHeading.FindStringSubmatch(line); m != nil {
			d, err := time.Parse("2006-01-02", m[2])
			if err != nil {
				return nil, fmt.Errorf("CHANGELOG.md: %q: %w", line, err)
			}
			rels = append(rels, release{version: m[1], date: d})
			inRelease = true
			continue
		}
		if strings.HasPrefix(line, "## ") {
			inRelease = false
			continue
		}
		if !inRelease {
			continue
		}
		r := &rels[len(rels)-1]
		switch {
		case strings.HasPrefix(line, "- "):
			r.items = append(r.items, strings.TrimPrefix(line, "- "))
		case strings.HasPrefix(line, "  ") && len(r.items) > 0 && strings.TrimSpace(line) != "":
			r.items[len(r.items)-1] += " " + strings.TrimSpace(line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("CHANGELOG.md: %w", err)
	}
	return rels, nil
}

// breakingPrefix marks an item of CHANGELOG.md that breaks something an
// older release's user relied on (the "Versioning" rule at its top): the
// release tool holds the version's bump to it, and the packaged
// changelogs carry it as "Breaking:".
const breakingPrefix = "**Breaking:**"

// packagedReleases are the releases the packages' changelogs list, newest
// first, their items as plain text (plainItem); the newest must be
// version, the VERSION file.
func packagedReleases(md []byte, version string) ([]release, error) {
	rels, err := parseChangelog(md)
	if err != nil {
		return nil, err
	}
	if len(rels) == 0 || rels[0].version != version {
		return nil, fmt.Errorf("CHANGELOG.md: the newest release must be [%s] (the VERSION file), found %d releases", version, len(rels))
	}
	for i := range rels {
		items := make([]string, len(rels[i].items))
		for j, it := range rels[i].items {
			items[j] = plainItem(it)
		}
		rels[i].items = items
	}
	return rels, nil
}

// plainItem is an item of CHANGELOG.md without its Markdown: no code
// quotes, no bold ("**Breaking:** x" is "Breaking: x").
func plainItem(item string) string {
	return strings.NewReplacer("`", "", "**", "").Replace(item)
}

// releaseTime is the instant a release's date stands for in the
// packages: noon UTC of the day, so that every time zone shows that day.
func releaseTime(r release) time.Time { return r.date.Add(12 * time.Hour) }

// debianChangelog writes CHANGELOG.md's releases in Debian's changelog
// format (deb-changelog(5)), which dpkg and lintian read from
// /usr/share/doc/gpuprep/changelog.gz. The newest entry must be version.
func debianChangelog(md []byte, pkg, version, maintainer string) ([]byte, error) {
	rels, err := packagedReleases(md, version)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for i, r := range rels {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s (%s) unstable; urgency=medium\n\n", pkg, r.version)
		for _, it := range r.items {
			if err := fits(r, it, 78-4); err != nil {
				return nil, err
			}
			b.WriteString(wrap("  * ", "    ", it, 78))
		}
		fmt.Fprintf(&b, "\n -- %s  %s\n", maintainer, releaseTime(r).Format(time.RFC1123Z))
	}
	return b.Bytes(), nil
}

// rpmChangelog writes the same releases as debianChangelog, with the same
// items, in the YAML of github.com/goreleaser/chglog, which nfpm's
// "changelog:" key reads and turns into the rpm's %changelog: one entry
// per release, newest first, one change per item (its continuation lines
// indented by two spaces, as rpm changelogs are).
func rpmChangelog(md []byte, version, packager string) ([]byte, error) {
	rels, err := packagedReleases(md, version)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("# The rpm's %changelog, made by packaging/pkgprep from CHANGELOG.md.\n")
	for _, r := range rels {
		fmt.Fprintf(&b, "- semver: %s\n  date: %s\n  packager: %s\n  changes:\n",
			yamlString(r.version), releaseTime(r).Format(time.RFC3339), yamlString(packager))
		for _, it := range r.items {
			// rpm prints the note after "- ": wrapped with it, then cut.
			note := strings.TrimSuffix(strings.TrimPrefix(wrap("- ", "  ", it, 78), "- "), "\n")
			fmt.Fprintf(&b, "    - note: %s\n", yamlString(note))
		}
	}
	return b.Bytes(), nil
}

// yamlString quotes s as a YAML double-quoted scalar (JSON's string
// escapes are YAML's too).
func yamlString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// rpmConfig is the nfpm configuration the rpm is built from: nfpmYAML
// (packaging/nfpm.yaml) with the key "changelog:" naming changelogPath.
// The deb is built from nfpmYAML itself: nfpm expands no variable in that
// key, no per-packager override sets it, and for a deb it would add
// changelog.Debian.gz beside the native package's changelog.gz.
func rpmConfig(nfpmYAML []byte, changelogPath string) ([]byte, error) {
	for _, l := range strings.Split(string(nfpmYAML), "\n") {
		if strings.HasPrefix(l, "changelog:") {
			return nil, fmt.Errorf("nfpm configuration: it sets %q, which would give the deb a second changelog; pkgprep adds the rpm's", l)
		}
	}
	var b bytes.Buffer
	b.Write(nfpmYAML)
	if len(nfpmYAML) > 0 && nfpmYAML[len(nfpmYAML)-1] != '\n' {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "\n# Added by packaging/pkgprep: the rpm's %%changelog (CHANGELOG.md).\nchangelog: %s\n", yamlString(changelogPath))
	return b.Bytes(), nil
}

// fits refuses an item of release r with a word wider than width (a
// metric name, a path) that no line could hold: the packages' changelogs
// would carry a line too long (lintian: debian-changelog-line-too-long).
func fits(r release, item string, width int) error {
	for _, w := range strings.Fields(item) {
		if len(w) > width {
			return fmt.Errorf("CHANGELOG.md [%s]: %q is %d columns, wider than a changelog line (%d) can hold: split it", r.version, w, len(w), width)
		}
	}
	return nil
}

// wrap fills text into lines of at most width columns, the first starting
// with first and the others with rest.
func wrap(first, rest, text string, width int) string {
	var b strings.Builder
	line := first
	empty := true
	for _, w := range strings.Fields(text) {
		if !empty && len(line)+1+len(w) > width {
			b.WriteString(line + "\n")
			line, empty = rest, true
		}
		if !empty {
			line += " "
		}
		line += w
		empty = false
	}
	b.WriteString(line + "\n")
	return b.String()
}

// gzipN compresses data as `gzip -9n` does: best compression, no file name
// and no time stamp, so the same input gives the same bytes.
func gzipN(data []byte) ([]byte, error) {
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
