package nodedesc

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/textfmt"
)

// lineWriter writes "key field field ..." lines: a field that is empty or
// holds a space, a quote, a backslash or a character that is not printable
// ASCII is written Go-quoted, any other bare.
type lineWriter struct{ b bytes.Buffer }

func (w *lineWriter) line(fields ...string) {
	for i, f := range fields {
		if i > 0 {
			w.b.WriteByte(' ')
		}
		if needsQuote(f) {
			w.b.WriteString(strconv.Quote(f))
		} else {
			w.b.WriteString(f)
		}
	}
	w.b.WriteByte('\n')
}

func needsQuote(s string) bool {
	if s == "" {
		return true
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '"' || c == '\\' {
			return true
		}
	}
	return false
}

// fields splits a line into its fields, unquoting quoted ones; they are
// appended to out[:0], so that a parser reuses one slice for every line.
func fields(out []string, line string) ([]string, error) {
	out = out[:0]
	if !strings.ContainsRune(line, '"') && !strings.Contains(line, "  ") && line[0] != ' ' && line[len(line)-1] != ' ' {
		return splitPlain(out, line), nil // as lineWriter writes it: the common case
	}
	for line != "" {
		if line[0] == ' ' {
			line = line[1:]
			continue
		}
		if line[0] == '"' {
			q, err := strconv.QuotedPrefix(line)
			if err != nil {
				return nil, fmt.Errorf("bad quoted field %s", textfmt.Clip(line, 60))
			}
			v, _ := strconv.Unquote(q)
			out = append(out, v)
			line = line[len(q):]
			if line != "" && line[0] != ' ' {
				return nil, fmt.Errorf("no space after quoted field %s", textfmt.Clip(q, 60))
			}
			continue
		}
		end := strings.IndexByte(line, ' ')
		if end < 0 {
			end = len(line)
		}
		out = append(out, line[:end])
		line = line[end:]
	}
	if len(out) == 0 {
		return nil, errors.New("blank line")
	}
	return out, nil
}

// splitPlain appends the space-separated fields of line to out.
func splitPlain(out []string, line string) []string {
	for {
		f, rest, more := strings.Cut(line, " ")
		out = append(out, f)
		if !more {
			return out
		}
		line = rest
	}
}

// set, ints and list write a CPU set, numbers and words, "-" when empty.
func set(s cpuset.Set) string {
	if s.IsEmpty() {
		return "-"
	}
	return s.String()
}

func ints(xs []int) string {
	if len(xs) == 0 {
		return "-"
	}
	return textfmt.JoinInts(xs, ",")
}

func list(xs []string) string {
	if len(xs) == 0 {
		return "-"
	}
	return strings.Join(xs, ",")
}

// parser reads fields of one file; the first bad field is its err.
type parser struct {
	name string
	ln   int
	err  error
}

func (p *parser) errorf(format string, a ...any) error {
	return fmt.Errorf("%s:%d: %s", p.name, p.ln, fmt.Sprintf(format, a...))
}

func (p *parser) fail(what, s string) {
	if p.err == nil {
		p.err = p.errorf("%q is not %s", textfmt.Clip(s, 60), what)
	}
}

func (p *parser) int(s string) int {
	v, err := strconv.Atoi(s)
	if err != nil {
		p.fail("a number", s)
	}
	return v
}

func (p *parser) set(s string) cpuset.Set {
	if s == "-" {
		return cpuset.New()
	}
	v, err := cpuset.Parse(s)
	if err != nil {
		p.fail("a CPU list", s)
	}
	return v
}

func (p *parser) ints(s string) []int {
	if s == "-" {
		return nil
	}
	parts := strings.Split(s, ",")
	out := make([]int, len(parts))
	for i, x := range parts {
		out[i] = p.int(x)
	}
	return out
}

func (p *parser) list(s string) []string {
	if s == "-" {
		return nil
	}
	return strings.Split(s, ",")
}
