package config

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

type walkInner struct {
	A int `toml:"a"`
}

type walkOuter struct {
	walkInner
	B       string `toml:"b,omitempty"`
	Skipped int    `toml:"-"`
	hidden  int    // unexported: not a key
	E       bool
}

func TestSchemaFields(t *testing.T) {
	want := []SchemaField{
		{"a", reflect.TypeFor[int]()},
		{"b", reflect.TypeFor[string]()},
		{"E", reflect.TypeFor[bool]()},
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[walkOuter](), reflect.TypeFor[*walkOuter]()} {
		got := SchemaFields(typ)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("SchemaFields(%v) = %v, want %v", typ, got, want)
		}
		got[0].Key = "changed" // the caller's copy
	}
	if got := SchemaFields(reflect.TypeFor[walkOuter]())[0].Key; got != "a" {
		t.Errorf("SchemaFields shares its result: first key %q after a caller changed it", got)
	}
	if got := SchemaFields(reflect.TypeFor[map[string]int]()); got != nil {
		t.Errorf("SchemaFields(map) = %v, want nil", got)
	}
	if got := SchemaFields(reflect.TypeFor[Config]()); len(got) == 0 || got[0].Key != "general" {
		t.Errorf("SchemaFields(Config) = %v, want general first", got)
	}
}

func TestSchemaFieldType(t *testing.T) {
	cfg := reflect.TypeFor[Config]()
	for _, tc := range []struct {
		t    reflect.Type
		key  string
		want reflect.Type
	}{
		{cfg, "general", reflect.TypeFor[GeneralSection]()},
		{reflect.TypeFor[*Config](), "general", reflect.TypeFor[GeneralSection]()},
		{reflect.TypeFor[GeneralSection](), "deadline", durationType},
		{reflect.TypeFor[walkOuter](), "a", reflect.TypeFor[int]()},
		{cfg, "General", nil}, // keys match exactly, unlike the toml package's
		{cfg, "nope", nil},
		{reflect.TypeFor[string](), "general", nil},
		{reflect.TypeFor[walkOuter](), "Skipped", nil},
	} {
		if got := SchemaFieldType(tc.t, tc.key); got != tc.want {
			t.Errorf("SchemaFieldType(%v, %q) = %v, want %v", tc.t, tc.key, got, tc.want)
		}
	}
}

func TestIsSchemaTable(t *testing.T) {
	for _, tc := range []struct {
		t           reflect.Type
		table, knob bool
	}{
		{reflect.TypeFor[Config](), true, false},
		{reflect.TypeFor[*GeneralSection](), true, false},
		{reflect.TypeFor[Knobs](), true, true},
		{reflect.TypeFor[ProfileSpec](), true, true},
		{reflect.TypeFor[map[string]ProfileSpec](), true, false},
		{reflect.TypeFor[map[string]string](), true, false}, // a table of values
		{reflect.TypeFor[Tristate](), false, false},         // decodes itself
		{reflect.TypeFor[MIGLayout](), false, false},        // decodes itself
		{reflect.TypeFor[[]walkOuter](), false, false},      // an array of tables decodes whole
		{reflect.TypeFor[string](), false, false},
	} {
		if got := IsSchemaTable(tc.t); got != tc.table {
			t.Errorf("IsSchemaTable(%v) = %v, want %v", tc.t, got, tc.table)
		}
		if got := IsKnobTable(tc.t); got != tc.knob {
			t.Errorf("IsKnobTable(%v) = %v, want %v", tc.t, got, tc.knob)
		}
	}
}

func TestTOMLKey(t *testing.T) {
	for _, tc := range []struct {
		key  []string
		want string
	}{
		{[]string{"general", "state_dir"}, "general.state_dir"},
		{[]string{"mig", "layout", "NVIDIA H200"}, `mig.layout."NVIDIA H200"`},
		{[]string{"a", ""}, `a.""`},
		{[]string{"x\ny"}, `"x\ny"`},
	} {
		if got := TOMLKey(tc.key...); got != tc.want {
			t.Errorf("TOMLKey(%q) = %s, want %s", tc.key, got, tc.want)
		}
	}
}

// TestTOMLValue holds what the man page and the error messages show: each
// value as TOML that decodes back to it, on one line.
func TestTOMLValue(t *testing.T) {
	for _, tc := range []struct {
		in   string // a TOML value
		want string
	}{
		{`"performance"`, `"performance"`},
		{`"a\nb\u001b"`, `"a\nb\x1b"`},
		{`-3`, `-3`},
		{`2.0`, `2.0`},
		{`1.5e300`, `1.5e+300`},
		{`inf`, `inf`},
		{`true`, `true`},
		{`1979-05-27T07:32:00Z`, `1979-05-27T07:32:00Z`},
		{`1979-05-27T07:32:00`, `1979-05-27T07:32:00`},
		{`1979-05-27`, `1979-05-27`},
		{`07:32:00`, `07:32:00`},
		{`["a", 1, [2.5]]`, `["a", 1, [2.5]]`},
		{`{}`, `{}`},
		{`{ sm = 2, mem = 1, "1g.10gb" = { x = [] } }`, `{"1g.10gb" = {x = []}, mem = 1, sm = 2}`},
		{`[{ a = 1 }, { "" = "x" }]`, `[{a = 1}, {"" = "x"}]`},
	} {
		var doc map[string]any
		if _, err := toml.Decode("v = "+tc.in, &doc); err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		got := TOMLValue(doc["v"])
		if got != tc.want {
			t.Errorf("TOMLValue(%s) = %s, want %s", tc.in, got, tc.want)
		}
		var back map[string]any
		if _, err := toml.Decode("v = "+got, &back); err != nil {
			t.Errorf("TOMLValue(%s) = %s: not TOML: %v", tc.in, got, err)
		} else if !reflect.DeepEqual(back["v"], doc["v"]) {
			t.Errorf("TOMLValue(%s) = %s: decodes to %#v, not %#v", tc.in, got, back["v"], doc["v"])
		}
	}
	if got := TOMLValue(math.NaN()); got != "nan" {
		t.Errorf("TOMLValue(NaN) = %s, want nan", got)
	}
	if got := TOMLValue(struct{ S string }{"a\nb"}); strings.ContainsAny(got, "\n") {
		t.Errorf("TOMLValue(struct) = %q: more than one line", got)
	}
}

// TestFloatMessage: a float where an integer belongs is quoted as the
// file writes it, 2.0, not as 2, which reads as the integer it must be.
func TestFloatMessage(t *testing.T) {
	_, err := Parse("g.toml", []byte("[profiles.fast]\nvm_swappiness = 2.0\n"))
	if want := `g.toml:2: profiles.fast.vm_swappiness = 2.0: must be an integer`; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}
