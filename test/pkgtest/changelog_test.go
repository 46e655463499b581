package pkgtest

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// changeEntry is one release in a package's changelog, as the test reads
// it: its version, its day and its items (whitespace folded).
type changeEntry struct {
	version, day string
	items        []string
}

// TestChangelog: the rpm's %changelog (rpm -qp --changelog) and the deb's
// /usr/share/doc/gpuprep/changelog.gz list the same releases, newest
// first, the newest being the VERSION file's, with the same days and
// items; CHANGELOG.md has the VERSION's entry; the deb carries no second
// changelog (changelog.Debian.gz).
func TestChangelog(t *testing.T) {
	t.Parallel()
	tools := need(t, "rpm", "dpkg-deb", "tar")
	deb, rpm := packages(t)

	rpmEntries := parseRPMChangelog(t, run(t, tools[0], "-qp", "--changelog", rpm))
	debText := gunzip(t, run(t, "sh", "-c", `"$0" --fsys-tarfile "$1" | "$2" -xO ./usr/share/doc/gpuprep/changelog.gz`, tools[1], deb, tools[2]))
	debEntries := parseDebChangelog(t, debText)
	if len(rpmEntries) == 0 || !reflect.DeepEqual(rpmEntries, debEntries) {
		t.Errorf("the changelogs differ:\n rpm %q\n deb %q", rpmEntries, debEntries)
	}
	if len(debEntries) == 0 || debEntries[0].version != pkgs.version {
		t.Errorf("the deb's newest entry is not the VERSION file's %s: %q", pkgs.version, debEntries)
	}
	md, err := os.ReadFile(filepath.Join(pkgs.repo, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	entry := regexp.MustCompile(`(?m)^## \[` + regexp.QuoteMeta(pkgs.version) + `\] - \d{4}-\d{2}-\d{2}$`)
	if !entry.Match(md) {
		t.Errorf("CHANGELOG.md has no \"## [%s] - YYYY-MM-DD\" entry (the VERSION file's)", pkgs.version)
	}
	if list := run(t, tools[1], "-c", deb); strings.Contains(list, "changelog.Debian") {
		t.Errorf("the deb has a second changelog:\n%s", list)
	}
}

// parseRPMChangelog reads `rpm --changelog`: "* Wed Dec 02 2026 Name
// <address> - 0.1.0" headings, "- " items and their continuation lines.
func parseRPMChangelog(t *testing.T, text string) []changeEntry {
	t.Helper()
	var es []changeEntry
	for _, l := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(l, "* "):
			f := strings.Fields(l)
			i := strings.LastIndex(l, " - ")
			if len(f) < 5 || i < 0 {
				t.Fatalf("rpm changelog heading %q", l)
			}
			d, err := time.Parse("Mon Jan 2 2006", strings.Join(f[1:5], " "))
			if err != nil {
				t.Fatalf("rpm changelog heading %q: %v", l, err)
			}
			es = append(es, changeEntry{version: l[i+3:], day: d.Format("2006-01-02")})
		case strings.HasPrefix(l, "- ") && len(es) > 0:
			es[len(es)-1].items = append(es[len(es)-1].items, l[2:])
		case strings.TrimSpace(l) != "" && len(es) > 0 && len(es[len(es)-1].items) > 0:
			addLine(&es[len(es)-1], l)
		}
	}
	return es
}

// parseDebChangelog reads a Debian changelog: "gpuprep (0.1.0) ..."
// headings, "  * " items, "    " continuation lines, " -- " trailers.
func parseDebChangelog(t *testing.T, text string) []changeEntry {
	t.Helper()
	var es []changeEntry
	for _, l := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(l, "gpuprep ("):
			v, _, _ := strings.Cut(strings.TrimPrefix(l, "gpuprep ("), ")")
			es = append(es, changeEntry{version: v})
		case len(es) == 0:
		case strings.HasPrefix(l, " -- "):
			_, d, _ := strings.Cut(l, ">  ")
			tm, err := time.Parse(time.RFC1123Z, d)
			if err != nil {
				t.Fatalf("deb changelog trailer %q: %v", l, err)
			}
			es[len(es)-1].day = tm.UTC().Format("2006-01-02")
		case strings.HasPrefix(l, "  * "):
			es[len(es)-1].items = append(es[len(es)-1].items, l[4:])
		case strings.TrimSpace(l) != "" && len(es[len(es)-1].items) > 0:
			addLine(&es[len(es)-1], l)
		}
	}
	return es
}

// addLine joins a continuation line to the entry's last item, whitespace
// folded.
func addLine(e *changeEntry, l string) {
	last := &e.items[len(e.items)-1]
	*last = strings.Join(strings.Fields(*last+" "+l), " ")
}

// gunzip decompresses data, failing the test when it is not gzip.
func gunzip(t *testing.T, data string) string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader([]byte(data)))
	if err != nil {
		t.Fatalf("changelog.gz: %v", err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("changelog.gz: %v", err)
	}
	return string(b)
}
