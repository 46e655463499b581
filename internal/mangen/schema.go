package mangen

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"gpuprep/lib/config"
)

// The configuration's schema is lib/config's Config type: a struct's
// fields are keys by their toml tags, a struct-valued field is a [table],
// a map of structs a [table.NAME] per entry, a slice of structs an
// [[array]] of tables, and a map of values (gres.type_names) a key whose
// value is a table of entries. Knobs and ProfileSpec are tables of knob
// keys (lib/knob's registry), a ProfileSpec with its own keys beside them.
// A type with its own UnmarshalTOML (Tristate, MIGLayout) is a value.
// lib/config reads the type (SchemaFields, IsSchemaTable, IsKnobTable in
// lib/config/schemawalk.go); this file lays it out as the page's sections.

var (
	durationType  = reflect.TypeFor[time.Duration]()
	tristateType  = reflect.TypeFor[config.Tristate]()
	migLayoutType = reflect.TypeFor[config.MIGLayout]()
)

// kind is what a schema path is.
type kind int

const (
	kindTable kind = iota // a struct, a map of structs, an array of tables, a knob table
	kindKey               // a value, or a map of values
	kindKnob              // a knob key in a knob table
	kindEntry             // an entry of a map of values (health.severity.gpu_count)
)

// isSection reports whether a value of type t is a table of the page:
// one of lib/config's schema tables (config.IsSchemaTable), except that a
// map of values (gres.type_names) is a key with entries, and an array of
// tables ([[nccl.fabric]]), which lib/config decodes as one value, is a
// table (no slice type of the schema decodes itself).
func isSection(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Map:
		return config.IsSchemaTable(t) && isSection(t.Elem())
	case reflect.Slice:
		return t.Elem().Kind() == reflect.Struct
	}
	return config.IsSchemaTable(t)
}

// resolved is a concrete key path resolved against the schema.
type resolved struct {
	pattern string // "general.state_dir", "profiles.*.cpu_governor", "mig.nodes.*.layout"
	kind    kind
	typ     reflect.Type
	name    string // the last key: a knob's or an entry's name
}

// resolve finds a concrete key path ("mig", "nodes", "gpu[01-04]",
// "layout") in the schema. A map's key stands as "*" in the pattern; an
// entry of a map of values resolves to the map's pattern.
func resolve(path []string) (resolved, error) {
	t := reflect.TypeFor[config.Config]()
	var pat []string
	for i, k := range path {
		last := i == len(path)-1
		if t.Kind() == reflect.Slice && isSection(t) {
			t = t.Elem() // [[array]]: its keys are the element's
		}
		switch {
		case config.IsKnobTable(t) && config.SchemaFieldType(t, k) == nil:
			if !config.IsKnob(k) {
				return resolved{}, fmt.Errorf("%s: %q is not a knob", strings.Join(path, "."), k)
			}
			if !last {
				return resolved{}, fmt.Errorf("%s: below knob %q", strings.Join(path, "."), k)
			}
			return resolved{pattern: strings.Join(append(pat, k), "."), kind: kindKnob, name: k}, nil
		case t.Kind() == reflect.Map && isSection(t):
			pat, t = append(pat, "*"), t.Elem()
		case t.Kind() == reflect.Map:
			if !last {
				return resolved{}, fmt.Errorf("%s: below entry %q", strings.Join(path, "."), k)
			}
			return resolved{pattern: strings.Join(pat, "."), kind: kindEntry, typ: t.Elem(), name: k}, nil
		case t.Kind() == reflect.Struct || config.IsKnobTable(t):
			ft := config.SchemaFieldType(t, k)
			if ft == nil {
				return resolved{}, fmt.Errorf("%s: no key %q in the schema", strings.Join(path, "."), k)
			}
			pat, t = append(pat, k), ft
		default:
			return resolved{}, fmt.Errorf("%s: %q is below a value", strings.Join(path, "."), k)
		}
	}
	r := resolved{pattern: strings.Join(pat, "."), kind: kindKey, typ: t}
	if isSection(t) {
		r.kind = kindTable
	}
	return r, nil
}

// typeName says in words what a key of type t takes.
func typeName(t reflect.Type) string {
	switch t {
	case durationType:
		return "duration"
	case tristateType:
		return `true, false or "auto"`
	case migLayoutType:
		return "MIG layout"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "integer"
	case reflect.Float64:
		return "number"
	case reflect.Slice:
		return "list of " + plural(typeName(t.Elem()))
	case reflect.Map:
		return "table of " + plural(typeName(t.Elem()))
	}
	return t.String() // a type this file does not know: the test says so
}

func plural(s string) string {
	if strings.HasSuffix(s, "s") {
		return s
	}
	return s + "s"
}

// schemaSection is one [table] of the schema as the page lists it.
type schemaSection struct {
	pattern string // "profiles.*", "nccl.fabric"
	header  string // "[profiles.NAME]", "[[nccl.fabric]]"
	typ     reflect.Type
	keys    []schemaKey
	knobs   bool // it also takes knob keys
	// perEntry is set for a table of a map or an array: a key it leaves
	// out has no built-in value of its own.
	perEntry bool
}

// schemaKey is one key of a section.
type schemaKey struct {
	name    string
	pattern string
	typ     reflect.Type
}

// schemaSections lists every table of the schema, depth first in
// declaration order.
func schemaSections() []schemaSection {
	var out []schemaSection
	var walk func(t reflect.Type, pat, header string, array, perEntry bool)
	walk = func(t reflect.Type, pat, header string, array, perEntry bool) {
		switch {
		case t.Kind() == reflect.Map:
			walk(t.Elem(), pat+".*", header+".NAME", false, true)
			return
		case t.Kind() == reflect.Slice:
			walk(t.Elem(), pat, header, true, true)
			return
		}
		s := schemaSection{pattern: pat, typ: t, knobs: config.IsKnobTable(t), header: "[" + header + "]", perEntry: perEntry}
		if array {
			s.header = "[" + s.header + "]"
		}
		var sub []config.SchemaField
		for _, f := range config.SchemaFields(t) {
			if isSection(f.Type) {
				sub = append(sub, f)
				continue
			}
			s.keys = append(s.keys, schemaKey{f.Key, join(pat, f.Key), f.Type})
		}
		if pat != "" && (len(s.keys) > 0 || s.knobs || len(sub) == 0) {
			out = append(out, s)
		}
		for _, f := range sub {
			walk(f.Type, join(pat, f.Key), join(header, f.Key), false, perEntry)
		}
	}
	walk(reflect.TypeFor[config.Config](), "", "", false, false)
	return out
}

func join(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}
