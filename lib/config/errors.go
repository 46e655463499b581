package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Error is a problem with a configuration file. Its text is one line,
// "FILE:LINE: MSG" ("FILE: MSG" when the line is unknown), so it can be the
// first stderr line of a prolog and the drain reason Slurm records.
type Error struct {
	File string // file name as given to Load or Parse
	Line int    // 1-based line; 0 when unknown
	Key  string // dotted TOML key the problem is about; "" for syntax errors
	Msg  string // what is wrong, one line, already naming Key where relevant
	Err  error  // underlying error, if any (a toml.ParseError, an fs error)
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// problem is an error about a key whose line is not yet known.
type problem struct {
	key []string
	msg string
}

// problems collects problems found while checking one file.
type problems []problem

func (ps *problems) add(key []string, format string, args ...any) {
	*ps = append(*ps, problem{key: append([]string(nil), key...), msg: fmt.Sprintf(format, args...)})
}

// first returns the problem nearest the top of the file as an *Error, or nil.
// Problems about keys the file holds come first; then those about keys it
// does not (inherited, or from the built-in defaults).
func (ps problems) first(file string, loc *locator) error {
	if len(ps) == 0 {
		return nil
	}
	type lined struct {
		problem
		line  int
		exact bool
	}
	all := make([]lined, len(ps))
	for i, p := range ps {
		line, exact := loc.line(p.key)
		all[i] = lined{p, line, exact}
	}
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.exact != b.exact {
			return a.exact
		}
		if (a.line == 0) != (b.line == 0) {
			return b.line == 0
		}
		return a.line < b.line
	})
	p := all[0]
	return &Error{File: file, Line: p.line, Key: formatKey(p.key), Msg: oneLine(p.msg)}
}

// formatKey is TOMLKey of a key held as a slice, as this package's
// messages name keys.
func formatKey(key []string) string { return TOMLKey(key...) }

// quoteKey is formatKey in double quotes, for a message naming a key; a key
// with quoted components is already delimited and is not quoted again.
func quoteKey(key []string) string {
	for _, k := range key {
		if !isBareKey(k) {
			return formatKey(key)
		}
	}
	return `"` + formatKey(key) + `"`
}

// maxValueLen bounds how much of a value an error message quotes.
const maxValueLen = 60

// formatValue writes a decoded TOML value as TOML for a message (TOMLValue),
// shortened to maxValueLen.
func formatValue(v any) string {
	s := TOMLValue(v)
	if utf8.RuneCountInString(s) > maxValueLen {
		r := []rune(s)
		s = string(r[:maxValueLen-3]) + "..."
	}
	return s
}

// oneLine escapes every non-printable rune and invalid byte of s, so the
// result never spans lines and never carries terminal control sequences.
func oneLine(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsPrint(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}
