package mangen

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"gpuprep/lib/config"
	"gpuprep/lib/knob"
)

// ExamplePath is the annotated configuration below the repository root:
// the descriptions of gpuprep.toml(5).
const ExamplePath = "examples/gpuprep.toml"

// configSynopsis is gpuprep.toml(5)'s SYNOPSIS: the file's path.
func configSynopsis() string { return line(bold(config.DefaultPath)) + "\n" }

// configSections renders the bodies of gpuprep.toml(5)'s SECTIONS AND KEYS
// and KNOBS: every table and key of lib/config's schema with its type,
// built-in value (lib/config's defaults.toml) and description
// (examples/gpuprep.toml). A key without a description, or a key the
// example sets that the schema lacks, is an error: the page would drift.
func configSections(root string) (keys, knobs string, err error) {
	doc, err := readExample(filepath.Join(root, ExamplePath))
	if err != nil {
		return "", "", err
	}
	if err := doc.check(); err != nil {
		return "", "", err
	}
	var builtin map[string]any
	if _, err := toml.Decode(string(config.DefaultsTOML()), &builtin); err != nil {
		return "", "", fmt.Errorf("built-in configuration: %w", err)
	}
	var b strings.Builder
	for _, s := range schemaSections() {
		writeSection(&b, s, doc, builtin)
	}
	return b.String(), knobsRoff(doc), nil
}

// check reports what the example gets wrong against the schema: lines it
// sets that the schema lacks, keys and knobs it does not describe.
func (d *exampleDoc) check() error {
	errs := slices.Clone(d.errs)
	for _, m := range d.undocumented() {
		errs = append(errs, fmt.Errorf("%s: no description of %s (a comment block right above it)", ExamplePath, m))
	}
	return errors.Join(errs...)
}

// undocumented lists the schema's keys and knobs the example describes
// nowhere.
func (d *exampleDoc) undocumented() []string {
	var out []string
	for _, s := range schemaSections() {
		for _, k := range s.keys {
			if d.desc[k.pattern] == nil {
				out = append(out, strings.ReplaceAll(k.pattern, "*", "NAME"))
			}
		}
	}
	for _, k := range config.KnobNames() {
		if d.knobs[k] == nil {
			out = append(out, "knob "+k)
		}
	}
	return out
}

// writeSection renders one [table]: its description, then its keys (keys
// sharing a description under one), then what a knob table takes.
func writeSection(b *strings.Builder, s schemaSection, doc *exampleDoc, builtin map[string]any) {
	b.WriteString(sectionHeading(".SS", s.header))
	if d := doc.desc[s.pattern]; d != nil {
		b.WriteString(blockRoff(d.lines, ".PP"))
	}
	for i := 0; i < len(s.keys); {
		d := doc.desc[s.keys[i].pattern]
		j := i + 1
		for j < len(s.keys) && doc.desc[s.keys[j].pattern] == d {
			j++
		}
		for n, k := range s.keys[i:j] {
			req := ".TP"
			if n > 0 {
				req = ".TQ"
			}
			b.WriteString(req + "\n" + line(keyTag(k, s.perEntry, builtin)) + "\n")
		}
		switch {
		case d == nil: // configSections refuses it first
		case d.section:
			b.WriteString("Described with " + escapeText(s.header) + " above.\n")
		default:
			b.WriteString(blockRoff(d.lines, ".IP"))
		}
		for _, k := range s.keys[i:j] {
			if k.typ.Kind() == reflect.Map {
				writeEntries(b, k, doc, builtin)
			}
		}
		i = j
	}
	if !s.knobs {
		return
	}
	b.WriteString(".PP\n")
	b.WriteString("Besides these, any knob key (see \\fBKNOBS\\fR below).\n")
	switch s.pattern {
	case "defaults":
		if m, ok := builtin["defaults"].(map[string]any); ok {
			b.WriteString("Built-in:\n" + literalRoff(tomlLines("", m)))
		}
	case "profiles.*":
		if m, ok := builtin["profiles"].(map[string]any); ok {
			b.WriteString("The built-in profiles:\n")
			var lines []string
			for _, name := range sortedKeys(m) {
				if p, ok := m[name].(map[string]any); ok {
					lines = append(lines, tomlLines(config.TOMLKey("profiles", name), p)...)
				}
			}
			b.WriteString(literalRoff(lines))
		}
	}
}

// keyTag is a key's tag line: its name, type and built-in value (none
// for a key of a map's or an array's tables).
func keyTag(k schemaKey, perEntry bool, builtin map[string]any) string {
	tag := bold(k.name) + " (" + escapeText(typeName(k.typ))
	if !perEntry {
		v, ok := lookup(builtin, strings.Split(k.pattern, "."))
		switch {
		case ok && k.typ.Kind() != reflect.Map:
			tag += "; built-in " + italic(config.TOMLValue(v))
		case ok: // its entries are listed below it
		case k.typ.Kind() == reflect.Map || k.typ.Kind() == reflect.Slice:
			tag += "; built-in: none"
		default: // not in defaults.toml: the type's zero value
			tag += "; built-in " + italic(config.TOMLValue(zeroTOML(k.typ)))
		}
	}
	return tag + ")"
}

// writeEntries lists a map key's entries: those the example describes,
// then the built-in ones it does not, each with its built-in value.
func writeEntries(b *strings.Builder, k schemaKey, doc *exampleDoc, builtin map[string]any) {
	var m map[string]any
	if !strings.Contains(k.pattern, "*") {
		v, _ := lookup(builtin, strings.Split(k.pattern, "."))
		m, _ = v.(map[string]any)
	}
	described := doc.entries[k.pattern]
	var names []string
	for _, e := range described {
		names = append(names, e.name)
	}
	for _, n := range sortedKeys(m) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		if ex := doc.examples[k.pattern]; len(ex) > 0 {
			b.WriteString(".IP\nFor example:\n.IP\n.nf\n")
			for _, l := range ex {
				b.WriteString(line(escapeCode(l)) + "\n")
			}
			b.WriteString(".fi\n")
		}
		return
	}
	b.WriteString(".RS\n")
	for _, n := range names {
		tag := bold(n)
		if v, ok := m[n]; ok {
			tag += " (built-in " + italic(config.TOMLValue(v)) + ")"
		}
		b.WriteString(".TP\n" + line(tag) + "\n")
		for _, e := range described {
			if e.name == n {
				b.WriteString(blockRoff(e.desc.lines, ".IP"))
			}
		}
	}
	b.WriteString(".RE\n")
}

// knobsRoff is the KNOBS section: every knob of lib/knob's registry, in
// its order, with its scope, an example value and its description.
func knobsRoff(doc *exampleDoc) string {
	var b strings.Builder
	b.WriteString("The keys of \\fB[defaults]\\fR, \\fB[profiles.NAME]\\fR and \\fB[profiles.NAME.invariants]\\fR, " +
		"each a setting of the node (shared by every job on it) or of each of the job's GPUs. " +
		"A knob a table leaves out is left alone.\n")
	for _, name := range config.KnobNames() {
		d, _ := knob.Lookup(name)
		scope := "node"
		if d.Kind == knob.GPUKind {
			scope = "each GPU of the job"
		}
		b.WriteString(".TP\n" + line(bold(name)+" ("+scope+"; e.g. "+italic(d.Example)+")") + "\n")
		if desc := doc.knobs[name]; desc != nil {
			b.WriteString(blockRoff(desc.lines, ".IP"))
		}
	}
	return b.String()
}

// blockRoff renders a description's lines: running text filled, "" lines
// as paragraph breaks (req: .PP at a section's level, .IP inside a tagged
// paragraph), lines indented past "# " literal.
func blockRoff(lines []string, req string) string {
	var b strings.Builder
	literal := false
	for _, l := range lines {
		isLiteral := strings.HasPrefix(l, " ")
		if literal && !isLiteral {
			b.WriteString(".fi\n")
			literal = false
		}
		switch {
		case l == "":
			b.WriteString(req + "\n")
		case isLiteral:
			if !literal {
				b.WriteString(".nf\n")
				literal = true
			}
			b.WriteString(line(escapeCode(l)) + "\n")
		default:
			b.WriteString(line(markup(l)) + "\n")
		}
	}
	if literal {
		b.WriteString(".fi\n")
	}
	return b.String()
}

// literalRoff renders lines as an indented literal block.
func literalRoff(lines []string) string {
	var b strings.Builder
	b.WriteString(".RS 4\n.nf\n")
	for _, l := range lines {
		b.WriteString(line(escapeCode(l)) + "\n")
	}
	b.WriteString(".fi\n.RE\n")
	return b.String()
}

// tomlLines writes table m as TOML lines: under a [header] when header is
// not "", its values first (knobs in the registry's order), then its
// tables.
func tomlLines(header string, m map[string]any) []string {
	var out, sub []string
	if header != "" {
		out = append(out, "["+header+"]")
	}
	order := config.KnobNames()
	keys := sortedKeys(m)
	sort.SliceStable(keys, func(i, j int) bool { return rank(order, keys[i]) < rank(order, keys[j]) })
	for _, k := range keys {
		if t, ok := m[k].(map[string]any); ok && header != "" && len(t) > 0 && !config.IsKnob(k) {
			sub = append(sub, k)
			continue
		}
		out = append(out, config.TOMLKey(k)+" = "+config.TOMLValue(m[k]))
	}
	for _, k := range sub {
		out = append(out, tomlLines(header+"."+config.TOMLKey(k), m[k].(map[string]any))...)
	}
	return out
}

// rank orders a table's keys: a knob's by the registry, others first.
func rank(order []string, k string) int {
	if i := slices.Index(order, k); i >= 0 {
		return i + 1
	}
	return 0
}

// lookup finds the value at path in a decoded TOML document.
func lookup(m map[string]any, path []string) (any, bool) {
	var v any = m
	for _, k := range path {
		t, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = t[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

// zeroTOML is the TOML value a key of type t has when defaults.toml leaves
// it out: the type's zero value.
func zeroTOML(t reflect.Type) any {
	switch {
	case t == durationType:
		return "0s"
	case t.Kind() == reflect.Bool:
		return false
	case t.Kind() == reflect.String:
		return ""
	}
	return int64(0)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
