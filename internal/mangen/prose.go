package mangen

import (
	"fmt"
	"os"
	"strings"
)

// A prose file (docs/man/<name>.<section>.txt) holds a page's hand-written
// sections, in a small markup (docs/man/README.md):
//
//	# TITLE          starts a section (NAME, DESCRIPTION, EXIT STATUS, ...)
//	blank line       ends a paragraph
//	* TAG            a tagged paragraph: TAG, then the lines below it
//	    text         (four spaces) a literal line: a command, a file
//	`code`           in running text: bold, hyphens as minus signs
//
// Lines starting with "//" are comments. The generator adds SYNOPSIS and
// OPTIONS (programs) or the keys (gpuprep.toml) itself.

// proseSection is one section of a prose file: its title and its body as
// roff.
type proseSection struct {
	Title string
	Roff  string
}

// allowedSections are the titles a prose file may use, in the order a page
// gives them (man-pages(7)); the generated ones are not among them.
var allowedSections = []string{"NAME", "DESCRIPTION", "EXIT STATUS", "ENVIRONMENT", "FILES", "EXAMPLES", "NOTES", "SEE ALSO"}

// readProse reads and converts the prose file at path.
func readProse(path string) ([]proseSection, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("man page prose: %w", err)
	}
	secs, err := parseProse(string(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return secs, nil
}

// parseProse converts prose markup to roff sections. It requires NAME and
// DESCRIPTION, and the sections it knows in man-pages(7)'s order.
func parseProse(src string) ([]proseSection, error) {
	var secs []proseSection
	var body []string // the current section's lines, markup
	flush := func() error {
		if len(secs) == 0 {
			if strings.TrimSpace(strings.Join(body, "")) != "" {
				return fmt.Errorf("text before the first # section")
			}
			return nil
		}
		s := &secs[len(secs)-1]
		if s.Title == "NAME" {
			s.Roff = nameLine(strings.TrimSpace(strings.Join(body, " ")))
		} else {
			s.Roff = proseBody(body)
		}
		return nil
	}
	last := -1
	for i, l := range strings.Split(src, "\n") {
		if strings.HasPrefix(l, "//") {
			continue
		}
		if t, ok := strings.CutPrefix(l, "# "); ok {
			if err := flush(); err != nil {
				return nil, err
			}
			t = strings.TrimSpace(t)
			idx := indexOf(allowedSections, t)
			if idx < 0 {
				return nil, fmt.Errorf("line %d: section %q: want one of %s", i+1, t, strings.Join(allowedSections, ", "))
			}
			if idx <= last {
				return nil, fmt.Errorf("line %d: section %q out of order (or twice): the order is %s", i+1, t, strings.Join(allowedSections, ", "))
			}
			last = idx
			secs = append(secs, proseSection{Title: t})
			body = nil
			continue
		}
		body = append(body, l)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	for _, want := range []string{"NAME", "DESCRIPTION"} {
		if findSection(secs, want) == nil {
			return nil, fmt.Errorf("no # %s section", want)
		}
	}
	if n := findSection(secs, "NAME"); !strings.Contains(n.Roff, `\-`) {
		return nil, fmt.Errorf("NAME must read \"name - what it does\"")
	}
	return secs, nil
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

func findSection(secs []proseSection, title string) *proseSection {
	for i := range secs {
		if secs[i].Title == title {
			return &secs[i]
		}
	}
	return nil
}

// nameLine is the NAME section's one line, "name - summary", as mandb and
// apropos read it: the names' hyphens and the dash escaped.
func nameLine(s string) string {
	names, summary, ok := strings.Cut(s, " - ")
	if !ok {
		return line(escapeText(s)) + "\n"
	}
	return line(escapeCode(names)+` \- `+escapeText(summary)) + "\n"
}

// proseBody converts a section's markup lines to roff.
func proseBody(lines []string) string {
	var b strings.Builder
	para := false    // inside running text
	literal := false // inside a literal block
	first := true
	endLiteral := func() {
		if literal {
			b.WriteString(".fi\n.RE\n")
			literal = false
		}
	}
	for _, l := range lines {
		switch {
		case strings.TrimSpace(l) == "":
			endLiteral()
			para = false
		case strings.HasPrefix(l, "    "):
			if !literal {
				if !para && !first {
					b.WriteString(".PP\n")
				}
				b.WriteString(".RS 4\n.nf\n")
				literal = true
			}
			b.WriteString(line(escapeCode(l[4:])) + "\n")
			first = false
		case strings.HasPrefix(l, "* "):
			endLiteral()
			b.WriteString(".TP\n" + line(markup(strings.TrimSpace(l[2:]))) + "\n")
			para = true
			first = false
		default:
			endLiteral()
			if !para && !first {
				b.WriteString(".PP\n")
			}
			b.WriteString(line(markup(strings.TrimSpace(l))) + "\n")
			para = true
			first = false
		}
	}
	endLiteral()
	return b.String()
}
