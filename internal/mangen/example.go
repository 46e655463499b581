package mangen

import (
	"fmt"
	"os"
	"strings"
)

// examples/gpuprep.toml documents every key in the comments above it; the
// page takes its descriptions from there. Its layout:
//
//   - "# text" lines form a comment block; "#" alone is a paragraph break
//     inside it, and text indented past "# " is a literal line (a command,
//     a list);
//   - a block directly above a [table] header describes the table, one
//     directly above a key = value line the key, together with a comment
//     at the end of that line; a block followed by a blank line is prose
//     about what follows, and describes nothing;
//   - a key with no comment of its own right below another key shares that
//     key's description (dead_job_grace and max_job_age), and right below
//     its table's header the table's;
//   - "#" followed directly by something else is a commented-out setting
//     or header ("#[mig.layout]", `#"0" = [...]`): it is parsed as if the
//     "#" were not there.

// block is one description: comment lines without their "# ".
type block struct {
	lines []string
	// section is set when a key borrows its table's description.
	section bool
}

// exampleDoc is what examples/gpuprep.toml says about the schema.
type exampleDoc struct {
	// desc is the description of each table and key, by schema pattern
	// ("general", "general.state_dir", "mig.nodes.*.layout").
	desc map[string]*block
	// knobs is each knob's description: the first one in a knob table.
	knobs map[string]*block
	// entries are the described entries of maps of values, by the map's
	// pattern, in file order.
	entries map[string][]entry
	// examples are the lines that set entries of maps of values, by the
	// map's pattern, commented out or not, with their table's header:
	// the example a page shows for a map with no built-in entries.
	examples map[string][]string
	// errs are lines the schema does not know, and lines not understood.
	errs []error
}

// entry is one described entry of a map of values.
type entry struct {
	name string
	desc *block
}

// readExample reads and parses the example configuration.
func readExample(path string) (*exampleDoc, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("example configuration: %w", err)
	}
	return parseExample(path, string(data)), nil
}

// parseExample parses an annotated configuration; name goes in errors.
func parseExample(name, src string) *exampleDoc {
	d := &exampleDoc{desc: map[string]*block{}, knobs: map[string]*block{}, entries: map[string][]entry{}, examples: map[string][]string{}}
	var (
		pending   []string // the comment block being read
		table     []string // the current table's path
		tableDesc *block   // the current table's description, for a key right below it
		prev      *block   // the key just above's description, for a key right below it
		afterHead bool     // the line above is the table's header
		header    string   // the current table's header line, uncommented
	)
	for i, raw := range strings.Split(src, "\n") {
		ln := strings.TrimRight(raw, " \t\r")
		errf := func(format string, a ...any) {
			d.errs = append(d.errs, fmt.Errorf("%s:%d: %s", name, i+1, fmt.Sprintf(format, a...)))
		}
		switch {
		case strings.TrimSpace(ln) == "":
			pending, prev, afterHead = nil, nil, false
			continue
		case ln == "#" || strings.HasPrefix(ln, "# "):
			pending = append(pending, strings.TrimPrefix(strings.TrimPrefix(ln, "#"), " "))
			continue
		}
		code := strings.TrimPrefix(ln, "#") // a commented-out setting or header
		if strings.HasPrefix(code, "[") {
			path, err := parseHeader(code)
			if err != nil {
				errf("%v", err)
				pending = nil
				continue
			}
			r, err := resolve(path)
			if err != nil {
				errf("%v", err)
			}
			table, tableDesc, prev, afterHead = path, nil, nil, true
			header, _, _ = strings.Cut(code, " #")
			if len(pending) > 0 {
				tableDesc = &block{lines: pending}
				if _, ok := d.desc[r.pattern]; !ok && err == nil {
					d.desc[r.pattern] = tableDesc
				}
			}
			pending = nil
			continue
		}
		keyPath, trailing, err := parseSetting(code)
		if err != nil {
			errf("%v", err)
			pending = nil
			continue
		}
		path := append(append([]string(nil), table...), keyPath...)
		var own *block
		if len(pending) > 0 || trailing != "" {
			own = &block{lines: pending}
			if trailing != "" {
				own.lines = append(own.lines, trailing)
			}
		}
		pending = nil
		r, err := resolve(path)
		if err != nil {
			errf("%v", err)
			continue
		}
		desc := own
		switch {
		case desc != nil:
		case prev != nil:
			desc = prev
		case afterHead && tableDesc != nil && r.kind == kindKey:
			desc = &block{lines: tableDesc.lines, section: true}
		}
		prev, afterHead = desc, false
		switch r.kind {
		case kindKnob:
			if _, ok := d.knobs[r.name]; !ok && desc != nil && !desc.section {
				d.knobs[r.name] = desc
			}
		case kindEntry:
			if len(keyPath) == 1 && len(d.examples[r.pattern]) == 0 {
				d.examples[r.pattern] = append(d.examples[r.pattern], header)
			}
			if len(keyPath) == 1 {
				v, _, _ := strings.Cut(code, " #")
				d.examples[r.pattern] = append(d.examples[r.pattern], strings.TrimSpace(v))
			}
			if own != nil {
				d.entries[r.pattern] = append(d.entries[r.pattern], entry{r.name, own})
			}
		default:
			if _, ok := d.desc[r.pattern]; !ok && desc != nil {
				d.desc[r.pattern] = desc
			}
		}
	}
	return d
}

// parseHeader parses a [table] or [[array]] header into its key path.
func parseHeader(s string) ([]string, error) {
	open, closing := "[", "]"
	if strings.HasPrefix(s, "[[") {
		open, closing = "[[", "]]"
	}
	path, rest, err := parseKeyPath(strings.TrimPrefix(s, open))
	if err != nil {
		return nil, fmt.Errorf("header %q: %w", s, err)
	}
	rest, ok := strings.CutPrefix(rest, closing)
	if rest = strings.TrimSpace(rest); !ok || (rest != "" && !strings.HasPrefix(rest, "#")) {
		return nil, fmt.Errorf("header %q not understood", s)
	}
	return path, nil
}

// parseSetting parses "key = value # comment" into the key's path and the
// comment's text; the value is skipped over (strings, arrays and inline
// tables), not checked: lib/config's tests keep the file valid.
func parseSetting(s string) (path []string, comment string, err error) {
	path, rest, err := parseKeyPath(s)
	if err != nil {
		return nil, "", err
	}
	rest, ok := strings.CutPrefix(strings.TrimSpace(rest), "=")
	if !ok {
		return nil, "", fmt.Errorf("%q: neither a comment, a [table] nor key = value", s)
	}
	var quote byte
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		switch {
		case quote != 0 && c == '\\' && quote == '"':
			i++
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
		case c == '"' || c == '\'':
			quote = c
		case c == '#':
			return path, strings.TrimSpace(rest[i+1:]), nil
		}
	}
	return path, "", nil
}

// parseKeyPath parses a dotted key (bare or quoted parts) at the start of
// s, and returns what follows it.
func parseKeyPath(s string) (path []string, rest string, err error) {
	s = strings.TrimSpace(s)
	for {
		var k string
		switch {
		case strings.HasPrefix(s, `"`) || strings.HasPrefix(s, "'"):
			end := strings.IndexByte(s[1:], s[0])
			if end < 0 {
				return nil, "", fmt.Errorf("%q: unterminated quoted key", s)
			}
			k, s = s[1:1+end], s[2+end:]
		default:
			end := strings.IndexFunc(s, func(r rune) bool {
				return !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
			})
			if end < 0 {
				end = len(s)
			}
			if end == 0 {
				return nil, "", fmt.Errorf("%q: no key", s)
			}
			k, s = s[:end], s[end:]
		}
		path = append(path, k)
		s = strings.TrimLeft(s, " \t")
		if !strings.HasPrefix(s, ".") {
			return path, s, nil
		}
		s = strings.TrimLeft(s[1:], " \t")
	}
}
