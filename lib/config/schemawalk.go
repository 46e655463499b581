package config

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/BurntSushi/toml"
)

// Walking the schema and writing TOML: the Config type read as the
// configuration file's tables and keys, for this package's strict check
// (strict.go) and error messages (errors.go) and for the gpuprep.toml(5)
// man page (internal/mangen), so that both read the schema one way.
//
// A struct is a table whose keys are its fields' toml tags; a map is a
// table of entries; Knobs and ProfileSpec are tables of knob keys
// (lib/knob's registry, KnobNames), a ProfileSpec with its own fields
// beside them. A type with its own UnmarshalTOML (Tristate, MIGLayout) is
// a value, however it is built.

var (
	unmarshalerType = reflect.TypeFor[toml.Unmarshaler]()
	knobsType       = reflect.TypeFor[Knobs]()
	profileSpecType = reflect.TypeFor[ProfileSpec]()
)

// SchemaField is one TOML key of a struct type of the schema.
type SchemaField struct {
	Key  string       // the field's toml tag, or its Go name when untagged
	Type reflect.Type // the field's Go type
}

// SchemaFields lists the TOML keys of struct type t (a pointer is
// followed) in declaration order, with the fields of embedded structs
// flattened as the toml package does and fields tagged "-" or unexported
// left out; nil when t is not a struct. A knob table's knob keys are not
// fields (KnobNames lists them). The caller may modify the result.
func SchemaFields(t reflect.Type) []SchemaField { return slices.Clone(fieldsOf(t)) }

var fieldCache sync.Map // reflect.Type -> []SchemaField

// fieldsOf is SchemaFields without the copy: the slice is shared.
func fieldsOf(t reflect.Type) []SchemaField {
	t = deref(t)
	if t.Kind() != reflect.Struct {
		return nil
	}
	if v, ok := fieldCache.Load(t); ok {
		return v.([]SchemaField)
	}
	var fs []SchemaField
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
			fs = append(fs, SchemaField{name, sf.Type})
		}
	}
	fieldCache.Store(t, fs)
	return fs
}

// SchemaFieldType is the type of the field of struct type t (a pointer is
// followed) with TOML key key; nil when there is none or t is not a
// struct.
func SchemaFieldType(t reflect.Type, key string) reflect.Type {
	for _, f := range fieldsOf(t) {
		if f.Key == key {
			return f.Type
		}
	}
	return nil
}

// IsKnobTable reports whether t is a table of knob keys: Knobs, or a
// ProfileSpec, which holds knob keys beside its own fields. Knob keys are
// not fields: lib/knob's registry lists them and decodes their values.
func IsKnobTable(t reflect.Type) bool { return t == knobsType || t == profileSpecType }

// IsSchemaTable reports whether a value of type t (a pointer is followed)
// is a TOML table whose keys the schema describes: a struct, a knob table
// or a map (of tables or of values). Anything else is a value, a type with
// its own UnmarshalTOML included, and so is a slice: an array of tables
// ([[nccl.fabric]]) decodes whole, as one value.
func IsSchemaTable(t reflect.Type) bool {
	t = deref(t)
	switch {
	case IsKnobTable(t):
		return true
	case reflect.PointerTo(t).Implements(unmarshalerType):
		return false
	}
	return t.Kind() == reflect.Struct || t.Kind() == reflect.Map
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// TOMLKey writes a dotted key the way TOML spells it: bare components
// where allowed, quoted (with escapes, so always one line) otherwise.
func TOMLKey(key ...string) string {
	var b strings.Builder
	for i, k := range key {
		if i > 0 {
			b.WriteByte('.')
		}
		if isBareKey(k) {
			b.WriteString(k)
		} else {
			b.WriteString(strconv.Quote(k))
		}
	}
	return b.String()
}

func isBareKey(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// TOMLValue writes v, a value the toml package decoded into an any, as
// TOML on one line: a string quoted (with escapes), a float with a
// fraction or exponent (nan, inf), a datetime as the toml package writes
// it, an array as [a, b], a table inline as {a = 1, b = "x"} with its
// keys sorted ({} when empty). Any other value is written as fmt.Sprint
// does, its non-printable runes escaped.
func TOMLValue(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case float64:
		return tomlFloat(v)
	case time.Time:
		return tomlTime(v)
	case []any:
		return tomlArray(v)
	case []map[string]any:
		return tomlArray(v)
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = TOMLKey(k) + " = " + TOMLValue(v[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return oneLine(fmt.Sprint(v))
}

func tomlArray[E any](v []E) string {
	parts := make([]string, len(v))
	for i, e := range v {
		parts[i] = TOMLValue(e)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// tomlFloat writes f so that it reads back as a float: 2 as 2.0.
func tomlFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// tomlTime writes t as the toml package does, which knows a local date,
// time or datetime (decoded into a zone of its own) from an offset one.
func tomlTime(t time.Time) string {
	var b strings.Builder
	if err := toml.NewEncoder(&b).Encode(map[string]time.Time{"v": t}); err != nil {
		return oneLine(fmt.Sprint(t))
	}
	return strings.TrimSuffix(strings.TrimPrefix(b.String(), "v = "), "\n")
}
