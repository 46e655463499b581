package mangen

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"gpuprep/lib/config"
)

const root = "../.."

var testOptions = Options{Root: root, Date: "2024-05-06", Version: "1.2.3"}

func render(t *testing.T, p Page) string {
	t.Helper()
	data, err := p.Render(testOptions)
	if err != nil {
		t.Fatalf("%s(%s): %v", p.Name, p.Section, err)
	}
	return string(data)
}

// TestProgramPagesNameEveryFlag: each program's page lists every flag its
// flag set has (built by the function the program parses with), with its
// shorthand, and the usage lines -h prints as its SYNOPSIS.
func TestProgramPagesNameEveryFlag(t *testing.T) {
	for _, p := range Pages {
		if p.FlagSet == nil {
			continue
		}
		page := render(t, p)
		options := page[strings.Index(page, ".SH OPTIONS"):]
		n := 0
		p.FlagSet().VisitAll(func(f *pflag.Flag) {
			n++
			if !strings.Contains(options, `\fB\%\-\-`+strings.ReplaceAll(f.Name, "-", `\-`)+`\fR`) {
				t.Errorf("%s(%s): OPTIONS does not name --%s", p.Name, p.Section, f.Name)
			}
			if f.Shorthand != "" && !strings.Contains(options, `\fB\%\-`+f.Shorthand+`\fR, `) {
				t.Errorf("%s(%s): OPTIONS does not name -%s", p.Name, p.Section, f.Shorthand)
			}
		})
		if n < 5 {
			t.Errorf("%s: only %d flags", p.Name, n)
		}
		forms, err := synopsisForms(p.FlagSet())
		if err != nil {
			t.Fatal(err)
		}
		syn := page[strings.Index(page, ".SH SYNOPSIS"):strings.Index(page, ".SH DESCRIPTION")]
		if got := strings.Count(syn, `\fB\%`+escapeCode(p.Name)+`\fR`); got != len(forms) {
			t.Errorf("%s: SYNOPSIS has %d forms, -h %d:\n%s", p.Name, got, len(forms), syn)
		}
	}
}

// TestSynopsisIsUsage: the SYNOPSIS forms are -h's usage lines.
func TestSynopsisIsUsage(t *testing.T) {
	forms, err := synopsisForms(Pages[0].FlagSet())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"gpuprep-prolog [flags]", "gpuprep-prolog --health [--json] [--gpu-backend procfs]"}
	if !slices.Equal(forms, want) {
		t.Errorf("forms %q, want %q", forms, want)
	}
}

// TestOptionsRoff: a flag's tag, value name, usage and default as roff.
func TestOptionsRoff(t *testing.T) {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	fs.SortFlags = false // as cmdenv.NewFlagSet: -h's order
	fs.StringP("out", "o", "/var/x", "write to `DIR` (see --json)")
	fs.Bool("dry-run", false, "write nothing")
	fs.Int("tasks", 0, "ranks")
	fs.Bool("secret", false, "hidden")
	_ = fs.MarkHidden("secret")
	got := optionsRoff(fs)
	want := `.TP
\fB\%\-o\fR, \fB\%\-\-out\fR \fI\%DIR\fR
write to DIR (see \fB\%\-\-json\fR) (default "/var/x")
.TP
\fB\%\-\-dry\-run\fR
write nothing
.TP
\fB\%\-\-tasks\fR \fI\%int\fR
ranks
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestEscaping: text that roff would read as requests or escapes.
func TestEscaping(t *testing.T) {
	for in, want := range map[string]string{
		`.hidden request`:  `\&.hidden request`,
		`'also a request`:  `\&'also a request`,
		`a \fB backslash`:  `a \efB backslash`,
		"caf\u00e9":        `caf\[u00E9]`,
		"no-hyphen change": "no-hyphen change",
	} {
		if got := line(escapeText(in)); got != want {
			t.Errorf("line(escapeText(%q)) = %q, want %q", in, got, want)
		}
	}
	if got := markup("run `gpuprep-prolog --dry-run` or --json, not x-y"); got != `run \fB\%gpuprep\-prolog \-\-dry\-run\fR or \fB\%\-\-json\fR, not x-y` {
		t.Errorf("markup: %q", got)
	}
	if got := nameLine("gpuprep-gres - print gres.conf"); got != `gpuprep\-gres \- print gres.conf`+"\n" {
		t.Errorf("nameLine: %q", got)
	}
}

// TestProseRules: a prose file's sections are known, in order, with NAME
// and DESCRIPTION.
func TestProseRules(t *testing.T) {
	for src, want := range map[string]string{
		"# NAME\nx - y\n# BUGS\nnone\n":                    `section "BUGS"`,
		"# NAME\nx - y\n# SEE ALSO\na\n# DESCRIPTION\nb\n": "out of order",
		"# DESCRIPTION\nb\n":                               "no # NAME",
		"# NAME\nx\n# DESCRIPTION\nb\n":                    "name - what it does",
		"stray\n# NAME\nx - y\n# DESCRIPTION\nb\n":         "before the first",
	} {
		if _, err := parseProse(src); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseProse(%q) = %v, want an error with %q", src, err, want)
		}
	}
	secs, err := parseProse("# NAME\nx - y\n# DESCRIPTION\nOne\ntwo.\n\n* TAG\nbody\n\n    .literal -x\n")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := secs[1].Roff, "One\ntwo.\n.TP\nTAG\nbody\n.PP\n.RS 4\n.nf\n\\&.literal \\-x\n.fi\n.RE\n"; got != want {
		t.Errorf("body\n%q, want\n%q", got, want)
	}
}

// TestConfigPageCoversSchema: gpuprep.toml(5) has a section for every
// table of lib/config's schema, every key with its built-in value, and
// every knob.
func TestConfigPageCoversSchema(t *testing.T) {
	page := render(t, Pages[len(Pages)-1])
	for _, s := range schemaSections() {
		head := sectionHeading(".SS", s.header)
		i := strings.Index(page, head)
		if i < 0 {
			t.Errorf("no section %s", s.header)
			continue
		}
		for _, k := range s.keys {
			if !strings.Contains(page[i:], "\n"+`\fB\%`+escapeCode(k.name)+`\fR (`) {
				t.Errorf("%s: no key %s", s.header, k.name)
			}
		}
	}
	for _, k := range config.KnobNames() {
		if !strings.Contains(page[strings.Index(page, ".SH KNOBS"):], `\fB\%`+escapeCode(k)+`\fR (`) {
			t.Errorf("KNOBS: no %s", k)
		}
	}
	def := config.Default()
	for key, want := range map[string]string{
		"state_dir": `"` + def.General.StateDir + `"`,
		"log_level": `"` + def.General.LogLevel + `"`,
		"deadline":  `"` + def.General.Deadline.String() + `"`,
	} {
		tag := `\fB\%` + escapeCode(key) + `\fR (`
		i := strings.Index(page, tag)
		if i < 0 || !strings.Contains(strings.SplitN(page[i:], "\n", 2)[0], "built-in "+italic(want)) {
			t.Errorf("%s: built-in %s not on its line", key, want)
		}
	}
	for _, want := range []string{"[profiles.NAME]", "[[nccl.fabric]]", "[mig.nodes.NAME]", "[profiles.NAME.invariants]"} {
		if !strings.Contains(page, sectionHeading(".SS", want)) {
			t.Errorf("no section %s", want)
		}
	}
}

// TestExampleDescribesSchema: examples/gpuprep.toml describes every key of
// the schema and sets none the schema lacks; a key added to Config
// without a comment in the example, or a key the example sets that is
// gone from Config, fails here.
func TestExampleDescribesSchema(t *testing.T) {
	doc, err := readExample(filepath.Join(root, ExamplePath))
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.check(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(root, ExamplePath))
	src := string(data)

	// A key the schema lacks.
	bad := strings.Replace(src, "\n[selection]\n", "\n[selection]\n# Gone.\nold_key = 1\n", 1)
	if err := parseExample("x.toml", bad).check(); err == nil || !strings.Contains(err.Error(), `no key "old_key"`) {
		t.Errorf("a key the schema lacks: %v", err)
	}
	// A key without a description: the lines above state_dir removed.
	i := strings.Index(src, "\nstate_dir = ")
	j := strings.LastIndex(src[:i], "[general]\n") + len("[general]\n")
	if j < len("[general]\n") {
		t.Fatal("example has no [general] state_dir")
	}
	bare := src[:j] + src[i+1:]
	err = parseExample("x.toml", bare).check()
	if err == nil || !strings.Contains(err.Error(), "no description of general.state_dir") {
		t.Errorf("a key without a description: %v", err)
	}
}

// TestDeterministic: the same tree gives the same bytes, and the date is
// SOURCE_DATE_EPOCH's, never the clock's.
func TestDeterministic(t *testing.T) {
	date, err := PageDate(root, func(k string) string {
		return map[string]string{"SOURCE_DATE_EPOCH": "1700000000"}[k]
	})
	if err != nil || date != "2023-11-14" {
		t.Errorf("PageDate = %q, %v; want 2023-11-14", date, err)
	}
	if _, err := PageDate(root, func(string) string { return "yesterday" }); err == nil {
		t.Error("PageDate took SOURCE_DATE_EPOCH=yesterday")
	}
	if d, err := PageDate(t.TempDir(), func(string) string { return "" }); err != nil || d != "" {
		t.Errorf("outside git: PageDate = %q, %v; want no date", d, err)
	}
	o := testOptions
	o.Date = date
	a, b := t.TempDir(), t.TempDir()
	fa, err := Generate(o, a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(o, b); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range fa {
		rel, _ := filepath.Rel(a, f)
		names = append(names, rel)
		x, _ := os.ReadFile(f)
		y, _ := os.ReadFile(filepath.Join(b, rel))
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between two runs", rel)
		}
		if !bytes.Contains(x, []byte(`.TH `)) || !bytes.Contains(x, []byte(` "2023-11-14" "gpuprep 1.2.3" `)) {
			t.Errorf("%s: .TH without the date and version", rel)
		}
	}
	want := []string{"man8/gpuprep-prolog.8", "man8/gpuprep-epilog.8", "man8/gpuprep-gres.8", "man8/gpuprep-health.8", "man1/srunwrap.1", "man5/gpuprep.toml.5"}
	if !slices.Equal(names, want) {
		t.Errorf("files %q, want %q", names, want)
	}
}

// TestGroffRendersWithoutWarnings: groff reads every page with all
// warnings on and says nothing, and man(1) renders it.
func TestGroffRendersWithoutWarnings(t *testing.T) {
	groff, err := exec.LookPath("groff")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("groff is not installed (Debian package groff-base)")
		}
		t.Skip("groff is not installed (Debian package groff-base)")
	}
	for _, p := range Pages {
		data := render(t, p)
		cmd := exec.Command(groff, "-man", "-ww", "-z", "-Tutf8")
		cmd.Stdin = strings.NewReader(data)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil || stderr.Len() > 0 {
			t.Errorf("%s(%s): groff: %v\n%s", p.Name, p.Section, err, stderr.String())
		}
	}
}
