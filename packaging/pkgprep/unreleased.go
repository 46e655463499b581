package main

import (
	"fmt"
	"sort"
	"strings"
)

// unreleasedHeading opens the changes of the next release in CHANGELOG.md.
const unreleasedHeading = "## [Unreleased]"

// fixSections are the Keep a Changelog sections a patch release may hold.
var fixSections = map[string]bool{"Fixed": true, "Security": true}

// unreleasedSection is CHANGELOG.md's [Unreleased] section.
type unreleasedSection struct {
	start, end int // its heading's line and the line after its last (0-based)
	items      []unreleasedItem
}

// unreleasedItem is one "- " item: the "### " section it is under ("" for
// none) and its first line.
type unreleasedItem struct{ section, text string }

// breaking counts the items marked breakingPrefix.
func (u unreleasedSection) breaking() int {
	n := 0
	for _, it := range u.items {
		if strings.HasPrefix(it.text, breakingPrefix) {
			n++
		}
	}
	return n
}

// summary counts the items by section: "Added 3, Fixed 1; 1 breaking".
func (u unreleasedSection) summary() string {
	count := map[string]int{}
	for _, it := range u.items {
		count[it.section]++
	}
	var parts []string
	for s, n := range count {
		if s == "" {
			s = "outside a section"
		}
		parts = append(parts, fmt.Sprintf("%s %d", s, n))
	}
	sort.Strings(parts)
	return fmt.Sprintf("%s; %d breaking", strings.Join(parts, ", "), u.breaking())
}

// findUnreleased finds the [Unreleased] section of md and its items; one
// without items is an error.
func findUnreleased(md []byte) (unreleasedSection, error) {
	lines := strings.Split(string(md), "\n")
	u := unreleasedSection{start: -1, end: len(lines)}
	for i, l := range lines {
		if strings.TrimRight(l, " \t\r") == unreleasedHeading {
			u.start = i
			break
		}
	}
	if u.start < 0 {
		return u, fmt.Errorf("CHANGELOG.md has no %q heading", unreleasedHeading)
	}
	section := ""
	for i := u.start + 1; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "## "):
			u.end = i
			return u, u.check()
		case strings.HasPrefix(l, "### "):
			section = strings.TrimSpace(l[4:])
		case strings.HasPrefix(l, "- "):
			u.items = append(u.items, unreleasedItem{section: section, text: l[2:]})
		}
	}
	return u, u.check()
}

// check refuses an [Unreleased] section without items.
func (u unreleasedSection) check() error {
	if len(u.items) == 0 {
		return fmt.Errorf("CHANGELOG.md: nothing under [Unreleased]: list the release's changes there first")
	}
	return nil
}

// checkBump says which bump from makes to, and refuses one that
// [Unreleased] does not allow: breaking items need the minor bump while
// the version is 0.x and the major from 1.0.0 on; a patch release holds
// fixes only.
func checkBump(from, to semver, u unreleasedSection) (string, error) {
	bump, err := from.bumpTo(to)
	if err != nil {
		return "", err
	}
	next := from.nextVersions()
	if n := u.breaking(); n > 0 {
		if from.major == 0 && bump == "patch" {
			return "", fmt.Errorf("[Unreleased] has %d %s items: while the version is 0.x a breaking change bumps the minor: release %s", n, breakingPrefix, next["minor"])
		}
		if from.major > 0 && bump != "major" {
			return "", fmt.Errorf("[Unreleased] has %d %s items: a breaking change bumps the major: release %s", n, breakingPrefix, next["major"])
		}
	}
	if bump == "patch" {
		for _, it := range u.items {
			if !fixSections[it.section] {
				return "", fmt.Errorf("a patch release holds fixes only (### Fixed, ### Security), and [Unreleased] has items under %q: release %s", it.section, next["minor"])
			}
		}
	}
	return bump, nil
}

// cutChangelog moves [Unreleased]'s content under heading, leaving an
// empty [Unreleased] above it. It returns the new CHANGELOG.md and the
// release's notes (its content).
func cutChangelog(md []byte, u unreleasedSection, heading string) ([]byte, string) {
	lines := strings.Split(string(md), "\n")
	body := strings.Join(lines[u.start+1:u.end], "\n")
	notes := strings.TrimSpace(body)
	var b strings.Builder
	b.WriteString(strings.Join(lines[:u.start+1], "\n"))
	b.WriteString("\n\n" + heading + "\n\n" + notes + "\n")
	if u.end < len(lines) {
		b.WriteString("\n" + strings.Join(lines[u.end:], "\n"))
	}
	return []byte(b.String()), notes
}
