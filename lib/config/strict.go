package config

import (
	"errors"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"gpuprep/lib/suggest"

	"github.com/BurntSushi/toml"
)

// The strict check walks a file parsed into Primitives against the Config
// type: every key must be a field's exact toml tag (the toml package itself
// matches field names case-insensitively) and every value must decode into
// its field. In a table of knob keys ([defaults], a profile, invariants) a
// key must be a registered knob's (lib/knob) and its Def.Decode must take
// the value. It reports each problem with its key, so the error can name the
// line; the decoder's own type errors carry neither in a usable form.
// parseOnto runs it only to explain a file the fast path (decode, Undecoded,
// keysExact) did not accept.

var durationType = reflect.TypeFor[time.Duration]()

// keyNames lists the keys a table of struct type t may hold.
func keyNames(t reflect.Type) []string {
	var names []string
	for _, f := range fieldsOf(t) {
		names = append(names, f.Key)
	}
	if IsKnobTable(t) {
		names = append(names, KnobNames()...)
	}
	return names
}

// keysExact reports whether every key of a decoded file names a schema field
// exactly (the decoder also accepts other letter cases), every table is a
// table, and every duration is written as a string (the decoder also takes
// an integer, as nanoseconds). It may say false for a good file (toml v1.6
// records the type of a key "" as its parent's); checkStrict decides then.
func keysExact(md toml.MetaData) bool {
keys:
	for _, key := range md.Keys() {
		t := reflect.TypeFor[Config]()
		for _, k := range key {
			t = deref(t)
			if IsKnobTable(t) && IsKnob(k) {
				continue keys // the knob's Decode checks its value
			}
			switch {
			case t.Kind() == reflect.Map:
				t = t.Elem()
			case t.Kind() == reflect.Struct && IsSchemaTable(t):
				ft := SchemaFieldType(t, k)
				if ft == nil {
					return false
				}
				t = ft
			default:
				return false // below a leaf: an inline table where a value belongs
			}
		}
		if deref(t) == durationType && md.Type(key...) != "String" {
			return false
		}
		// toml v1.6 decodes a non-table into a map as nothing, without error.
		if IsSchemaTable(t) && md.Type(key...) != "Hash" {
			return false
		}
	}
	return true
}

// fieldType is SchemaFieldType, by the name knobs.go uses.
func fieldType(t reflect.Type, k string) reflect.Type { return SchemaFieldType(t, k) }

// checkStrict reports every unknown key and every value of the wrong type in
// root, a file parsed into Primitives, against the Config type.
func checkStrict(md toml.MetaData, root map[string]toml.Primitive) problems {
	var ps problems
	checkTable(md, root, reflect.TypeFor[Config](), nil, &ps)
	return ps
}

func checkTable(md toml.MetaData, tbl map[string]toml.Primitive, t reflect.Type, path []string, ps *problems) {
	t = deref(t)
	keys := make([]string, 0, len(tbl))
	for k := range tbl {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		key := append(append([]string(nil), path...), k)
		var ft reflect.Type
		if t.Kind() == reflect.Map {
			ft = t.Elem()
		} else {
			ft = SchemaFieldType(t, k)
			if ft == nil && IsKnobTable(t) {
				var raw any
				_ = md.PrimitiveDecode(tbl[k], &raw)
				if _, p := decodeKnob(k, raw); p != nil {
					p.report(t, path, ps)
				}
				continue
			}
			if ft == nil {
				ps.add(key, "unknown key %s%s", quoteKey(key), suggestKey(t, path, k))
				continue
			}
		}
		checkValue(md, tbl[k], ft, key, ps)
	}
}

func checkValue(md toml.MetaData, p toml.Primitive, t reflect.Type, key []string, ps *problems) {
	var raw any
	_ = md.PrimitiveDecode(p, &raw)
	if IsSchemaTable(t) {
		var sub map[string]toml.Primitive
		if _, ok := raw.(map[string]any); !ok || md.PrimitiveDecode(p, &sub) != nil {
			ps.add(key, "%s = %s: must be a table", formatKey(key), formatValue(raw))
			return
		}
		checkTable(md, sub, t, key, ps)
		return
	}
	bad := func(why string) { ps.add(key, "%s = %s: %s", formatKey(key), formatValue(raw), why) }
	if deref(t) == durationType {
		s, ok := raw.(string)
		if d, err := time.ParseDuration(s); !ok || err != nil || d < 0 {
			bad(`must be a duration such as "30s" or "1m30s"`)
		}
		return
	}
	err := md.PrimitiveDecode(p, reflect.New(t).Interface())
	if err == nil {
		return
	}
	var pe toml.ParseError
	if reflect.PointerTo(deref(t)).Implements(unmarshalerType) && errors.As(err, &pe) {
		bad(pe.Message) // the type's own UnmarshalTOML says what it accepts
		return
	}
	bad("must be " + describe(t))
}

// describe names the TOML values a leaf of type t accepts.
func describe(t reflect.Type) string {
	t = deref(t)
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Float64:
		return "a number"
	case reflect.Slice:
		return "a list of " + strings.TrimPrefix(strings.TrimPrefix(describe(t.Elem()), "a "), "an ") + "s"
	}
	return t.String()
}

// suggestKey returns ` (did you mean "x"?)` for an unknown key k in the
// table at path of struct type t: a sibling spelt alike, or the same name in
// another table (state_dir at the top level is general.state_dir).
func suggestKey(t reflect.Type, path []string, k string) string {
	if s := suggest.Closest(k, keyNames(t)); s != "" {
		return " (did you mean " + quoteKey(append(append([]string(nil), path...), s)) + "?)"
	}
	for _, pat := range schemaKeys() {
		if i := strings.LastIndexByte(pat, '.'); i >= 0 && pat[i+1:] == k {
			return ` (did you mean "` + pat + `"?)`
		}
	}
	return ""
}

var schemaKeysOnce = sync.OnceValue(func() []string {
	var out []string
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		t = deref(t)
		if t.Kind() == reflect.Map {
			if IsSchemaTable(t.Elem()) {
				walk(t.Elem(), prefix+"*.")
			} else {
				out = append(out, prefix+"*")
			}
			return
		}
		for _, f := range fieldsOf(t) {
			if IsSchemaTable(f.Type) {
				walk(f.Type, prefix+f.Key+".")
			} else {
				out = append(out, prefix+f.Key)
			}
		}
		if IsKnobTable(t) {
			for _, n := range KnobNames() {
				out = append(out, prefix+n)
			}
		}
	}
	walk(reflect.TypeFor[Config](), "")
	return out
})

// schemaKeys lists every leaf key of the schema as a dotted pattern, "*"
// standing for a map key: "general.state_dir", "profiles.*.cpu_governor",
// "gres.type_names.*". Tests use it to hold examples/gpuprep.toml complete.
func schemaKeys() []string { return schemaKeysOnce() }
