package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
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

// debianChangelog writes CHANGELOG.md's releases in Debian's changelog
// format (deb-changelog(5)), which dpkg and lintian read from
// /usr/share/doc/gpuprep/changelog.gz. The newest entry must be version.
func debianChangelog(md []byte, pkg, version, maintainer string) ([]byte, error) {
	rels, err := parseChangelog(md)
	if err != nil {
		return nil, err
	}
	if len(rels) == 0 || rels[0].version != version {
		return nil, fmt.Errorf("CHANGELOG.md: the newest release must be [%s] (the VERSION file), found %d releases", version, len(rels))
	}
	var b bytes.Buffer
	for i, r := range rels {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s (%s) unstable; urgency=medium\n\n", pkg, r.version)
		for _, it := range r.items {
			b.WriteString(wrap("  * ", "    ", strings.ReplaceAll(it, "`", ""), 78))
		}
		// Noon UTC of the release day: a date, not an instant.
		fmt.Fprintf(&b, "\n -- %s  %s\n", maintainer, r.date.Add(12*time.Hour).Format(time.RFC1123Z))
	}
	return b.Bytes(), nil
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
