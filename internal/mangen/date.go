package mangen

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// PageDate is the date a page carries, never the clock's, so that a build
// makes the same bytes again: SOURCE_DATE_EPOCH (reproducible-builds.org)
// when set, else the date of the repository's last commit (git log), else
// "" (no date). getenv is os.Getenv in the command.
func PageDate(root string, getenv func(string) string) (string, error) {
	if s := getenv("SOURCE_DATE_EPOCH"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return "", fmt.Errorf("SOURCE_DATE_EPOCH=%q: want seconds since 1970", s)
		}
		return time.Unix(n, 0).UTC().Format(time.DateOnly), nil
	}
	cmd := exec.Command("git", "-C", root, "log", "-1", "--format=%cd", "--date=format-local:%Y-%m-%d")
	cmd.Env = append(os.Environ(), "TZ=UTC") // the same day on every machine
	out, err := cmd.Output()
	if err != nil {
		return "", nil // not a git checkout (a source tarball): no date
	}
	return strings.TrimSpace(string(out)), nil
}

// FileVersion is the version in the repository's VERSION file, "" when
// there is none.
func FileVersion(root string) string {
	data, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}
