package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// semver is a release's version, MAJOR.MINOR.PATCH (semver.org 2.0.0,
// without pre-release or build suffixes: gpuprep's packages have none).
type semver struct{ major, minor, patch int }

// semverRE is semver.org's grammar: the three numbers without leading
// zeros, then an optional pre-release and build suffix.
var semverRE = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// parseSemver parses "x.y.z"; a valid version with a suffix is refused
// with its own reason.
func parseSemver(s string) (semver, error) {
	if strings.HasPrefix(s, "v") {
		return semver{}, fmt.Errorf("version %q: write it without the v (the tag gets it)", s)
	}
	m := semverRE.FindStringSubmatch(s)
	if m == nil {
		return semver{}, fmt.Errorf("version %q is not a semantic version MAJOR.MINOR.PATCH (semver.org)", s)
	}
	if m[4] != "" || m[5] != "" {
		return semver{}, fmt.Errorf("version %q: pre-release and build suffixes are not released (the packages' versions are MAJOR.MINOR.PATCH)", s)
	}
	var v semver
	for i, p := range []*int{&v.major, &v.minor, &v.patch} {
		n, err := strconv.Atoi(m[i+1])
		if err != nil {
			return semver{}, fmt.Errorf("version %q: %w", s, err)
		}
		*p = n
	}
	return v, nil
}

// String is "x.y.z".
func (v semver) String() string { return fmt.Sprintf("%d.%d.%d", v.major, v.minor, v.patch) }

// less orders versions by semver.org's precedence.
func (v semver) less(w semver) bool {
	if v.major != w.major {
		return v.major < w.major
	}
	if v.minor != w.minor {
		return v.minor < w.minor
	}
	return v.patch < w.patch
}

// nextVersions are the releases that may follow v, by bump.
func (v semver) nextVersions() map[string]semver {
	return map[string]semver{
		"patch": {v.major, v.minor, v.patch + 1},
		"minor": {v.major, v.minor + 1, 0},
		"major": {v.major + 1, 0, 0},
	}
}

// bumpTo says which bump makes to from v, or an error naming the three
// versions that may follow v.
func (v semver) bumpTo(to semver) (string, error) {
	next := v.nextVersions()
	for _, b := range []string{"patch", "minor", "major"} {
		if next[b] == to {
			return b, nil
		}
	}
	return "", fmt.Errorf("version %s skips releases: after %s comes %s (fixes only), %s or %s",
		to, v, next["patch"], next["minor"], next["major"])
}
