package mangen

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"gpuprep/lib/config"
)

// The configuration's schema is lib/config's Config type: a struct's
// fields are keys by their toml tags, a struct-valued field is a [table],
// a map of structs a [table.NAME] per entry, a slice of structs an
// [[array]] of tables, and a map of values (gres.type_names) a key whose
// value is a table of entries. Knobs and ProfileSpec are tables of knob
// keys (lib/knob's registry), a ProfileSpec with its own keys beside them.
// A type with its own UnmarshalTOML (Tristate, MIGLayout) is a value.

var (
	durationType    = reflect.TypeFor[time.Duration]()
	unmarshalerType = reflect.TypeFor[toml.Unmarshaler]()
	knobsType       = reflect.TypeFor[config.Knobs]()
	profileSpecType = reflect.TypeFor[config.ProfileSpec]()
	tristateType    = reflect.TypeFor[config.Tristate]()
	migLayoutType   = reflect.TypeFor[config.MIGLayout]()
)

// kind is what a schema path is.
type kind int

const (
	kindTable kind = iota // a struct, a map of structs, an array of tables, a knob table
	kindKey               // a value, or a map of values
	kindKnob              // a knob key in a knob table
	kindEntry             // an entry of a map of values (health.severity.gpu_count)
)

// isKnobTable reports whether t holds knob keys.
func isKnobTable(t reflect.Type) bool { return t == knobsType || t == profileSpecType }

// isTable reports whether a value of type t is a TOML table of keys the
// schema describes: a struct, a map of tables, an array of tables or a
// knob table. A map of values is a key.
func isTable(t reflect.Type) bool {
	switch {
	case isKnobTable(t):
		return true
	case reflect.PointerTo(t).Implements(unmarshalerType):
		return false
	case t.Kind() == reflect.Struct:
		return true
	case t.Kind() == reflect.Map:
		return isTable(t.Elem())
	case t.Kind() == reflect.Slice:
		return t.Elem().Kind() == reflect.Struct
	}
	return false
}

// field is one key of a struct type.
type field struct {
	name string
	typ  reflect.Type
}

// fieldsOf lists the TOML keys of struct type t in declaration order,
// embedded structs' flattened, fields tagged "-" left out.
func fieldsOf(t reflect.Type) []field {
	var fs []field
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("toml"), ",")
		switch {
		case name == "-":
		case sf.Anonymous && name == "" && sf.Type.Kind() == reflect.Struct:
			fs = append(fs, fieldsOf(sf.Type)...)
		case !sf.IsExported():
		default:
			if name == "" {
				name = sf.Name
			}
			fs = append(fs, field{name, sf.Type})
		}
	}
	return fs
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
		if t.Kind() == reflect.Slice && isTable(t) {
			t = t.Elem() // [[array]]: its keys are the element's
		}
		switch {
		case isKnobTable(t) && fieldType(t, k) == nil:
			if !config.IsKnob(k) {
				return resolved{}, fmt.Errorf("%s: %q is not a knob", strings.Join(path, "."), k)
			}
			if !last {
				return resolved{}, fmt.Errorf("%s: below knob %q", strings.Join(path, "."), k)
			}
			return resolved{pattern: strings.Join(append(pat, k), "."), kind: kindKnob, name: k}, nil
		case t.Kind() == reflect.Map && isTable(t):
			pat, t = append(pat, "*"), t.Elem()
		case t.Kind() == reflect.Map:
			if !last {
				return resolved{}, fmt.Errorf("%s: below entry %q", strings.Join(path, "."), k)
			}
			return resolved{pattern: strings.Join(pat, "."), kind: kindEntry, typ: t.Elem(), name: k}, nil
		case t.Kind() == reflect.Struct || isKnobTable(t):
			ft := fieldType(t, k)
			if ft == nil {
				return resolved{}, fmt.Errorf("%s: no key %q in the schema", strings.Join(path, "."), k)
			}
			pat, t = append(pat, k), ft
		default:
			return resolved{}, fmt.Errorf("%s: %q is below a value", strings.Join(path, "."), k)
		}
	}
	r := resolved{pattern: strings.Join(pat, "."), kind: kindKey, typ: t}
	if isTable(t) {
		r.kind = kindTable
	}
	return r, nil
}

// fieldType is the type of struct t's key k, nil when it has none.
func fieldType(t reflect.Type, k string) reflect.Type {
	if t.Kind() != reflect.Struct {
		return nil
	}
	for _, f := range fieldsOf(t) {
		if f.name == k {
			return f.typ
		}
	}
	return nil
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
		s := schemaSection{pattern: pat, typ: t, knobs: isKnobTable(t), header: "[" + header + "]", perEntry: perEntry}
		if array {
			s.header = "[" + s.header + "]"
		}
		var sub []field
		for _, f := range fieldsOf(t) {
			if isTable(f.typ) {
				sub = append(sub, f)
				continue
			}
			s.keys = append(s.keys, schemaKey{f.name, join(pat, f.name), f.typ})
		}
		if pat != "" && (len(s.keys) > 0 || s.knobs || len(sub) == 0) {
			out = append(out, s)
		}
		for _, f := range sub {
			walk(f.typ, join(pat, f.name), join(header, f.name), false, perEntry)
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
