package mangen

import (
	"fmt"
	"regexp"
	"strings"
)

// escapeText escapes s for roff text: a backslash becomes \e and a
// character outside ASCII \[uXXXX], so that groff reads any input the same
// whatever its input encoding. Hyphens stay hyphens (prose); escapeCode
// also makes them minus signs.
func escapeText(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\e`)
		case r == '\t':
			b.WriteByte(' ')
		case r > 0x7e || (r < 0x20):
			fmt.Fprintf(&b, `\[u%04X]`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// escapeCode escapes s like escapeText and writes every hyphen as \-, the
// minus sign a reader types: option names, commands, file contents.
func escapeCode(s string) string {
	return strings.ReplaceAll(escapeText(s), "-", `\-`)
}

// line makes s, already escaped, safe as one roff text line: a leading .
// or ' would make it a request, so \& goes before it.
func line(s string) string {
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		return `\&` + s
	}
	return s
}

// bold is s (raw text) in bold, escaped as code.
// \% keeps groff from hyphenating it.
func bold(s string) string { return `\fB\%` + escapeCode(s) + `\fR` }

// italic is s (raw text) in italics, escaped as code.
func italic(s string) string { return `\fI\%` + escapeCode(s) + `\fR` }

// optionToken matches an option name in running text ("--json", "-h",
// "--numa-as-socket"), after the start, a space or an opening bracket.
var optionToken = regexp.MustCompile(`(^|[\s(\[|])(--?[a-z][a-z0-9-]*)`)

// inline escapes running text (raw) and sets the option names in it in
// bold, their hyphens as minus signs.
func inline(s string) string {
	var b strings.Builder
	last := 0
	for _, m := range optionToken.FindAllStringSubmatchIndex(s, -1) {
		b.WriteString(escapeText(s[last:m[3]]))
		b.WriteString(bold(s[m[4]:m[5]]))
		last = m[5]
	}
	b.WriteString(escapeText(s[last:]))
	return b.String()
}

// markup is inline with `code` spans: a span between backquotes is bold,
// its hyphens minus signs.
func markup(s string) string {
	parts := strings.Split(s, "`")
	var b strings.Builder
	for i, p := range parts {
		if i%2 == 1 && i < len(parts)-1 {
			b.WriteString(bold(p))
			continue
		}
		if i%2 == 1 { // an unmatched backquote stays as written
			b.WriteString("`")
		}
		b.WriteString(inline(p))
	}
	return b.String()
}

// sectionHeading is the .SH request of a section title, quoted when it
// has spaces.
func sectionHeading(req, title string) string {
	t := escapeText(title)
	if strings.ContainsAny(title, " \t") {
		t = `"` + strings.ReplaceAll(t, `"`, `\(dq`) + `"`
	}
	return req + " " + t + "\n"
}

// quoteArg quotes s (escaped) as a macro argument.
func quoteArg(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `\(dq`) + `"`
}
