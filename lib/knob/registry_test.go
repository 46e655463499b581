package knob

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// TestRegistry: the registry is well formed, and every list of knobs
// derives from it.
func TestRegistry(t *testing.T) {
	defs := Defs()
	if len(defs) == 0 {
		t.Fatal("no knobs registered")
	}
	var names, node, gpus []string
	for i, d := range defs {
		if i > 0 && defs[i-1].Order >= d.Order {
			t.Errorf("%s: out of order after %s", d.Name, defs[i-1].Name)
		}
		if d.Doc == "" || strings.Contains(d.Doc, "\n") {
			t.Errorf("%s: Doc must be one line", d.Name)
		}
		if got, ok := Lookup(d.Name); !ok || got.Name != d.Name {
			t.Errorf("Lookup(%s) = %v", d.Name, ok)
		}
		names = append(names, d.Name)
		if d.Kind == GPUKind {
			gpus = append(gpus, d.Name)
			if !IsGPUKnob(d.Name) {
				t.Errorf("IsGPUKnob(%s) false", d.Name)
			}
		} else {
			if len(gpus) > 0 {
				t.Errorf("node knob %s after GPU knobs", d.Name)
			}
			node = append(node, d.Name)
			if IsGPUKnob(d.Name) {
				t.Errorf("IsGPUKnob(%s) true", d.Name)
			}
		}
	}
	if !slices.Equal(Names(), names) || !slices.Equal(NodeKnobNames(), node) || !slices.Equal(GPUKnobNames(), gpus) {
		t.Errorf("Names %v\nNodeKnobNames %v\nGPUKnobNames %v", Names(), NodeKnobNames(), GPUKnobNames())
	}
	if IsGPUKnob("no_such_knob") {
		t.Error("IsGPUKnob(no_such_knob)")
	}
	if _, ok := Lookup("no_such_knob"); ok {
		t.Error("Lookup(no_such_knob)")
	}
	// cpufreqKnob's Apply of the governor resets the EPP: the governor
	// must come first.
	if slices.Index(names, "cpu_governor") > slices.Index(names, "energy_performance_preference") {
		t.Error("cpu_governor must come before energy_performance_preference")
	}
	// The constructors build the knob their Def names, in order.
	b, devs := mockGPUs(t)
	var built []string
	for _, k := range Catalog(Env{Root: writeTree(t, smallNode().files()), GPU: b, GPUs: devs[:1]}) {
		built = append(built, k.ID().Name)
		if d, _ := Lookup(k.ID().Name); (d.Kind == GPUKind) != (k.ID().Scope != NodeScope) {
			t.Errorf("%s: scope %s", k.ID(), d.Kind)
		}
	}
	if !slices.Equal(built, names) {
		t.Errorf("Catalog builds %v\nregistry %v", built, names)
	}
	// Tests that set every knob set every registered one.
	if got := slices.Sorted(maps.Keys(everySetting)); !slices.Equal(got, slices.Sorted(slices.Values(names))) {
		t.Errorf("everySetting covers %v", got)
	}
}

// decodeExample decodes a Def's Example as the toml package would hand it
// to Decode.
func decodeExample(t *testing.T, d Def) any {
	t.Helper()
	var m map[string]any
	if _, err := toml.Decode("v = "+d.Example, &m); err != nil {
		t.Fatalf("%s: Example %s: %v", d.Name, d.Example, err)
	}
	return m["v"]
}

// TestExamplesDesired: every Def's Example decodes, and the knob's Desired
// takes the setting on the dgxh100 fixture and its mock GPUs.
func TestExamplesDesired(t *testing.T) {
	b, devs := mockGPUs(t)
	for _, k := range Catalog(Env{Root: knobRoot(t, "dgxh100"), GPU: b, GPUs: devs[:1]}) {
		d, _ := Lookup(k.ID().Name)
		s, err := d.Decode(decodeExample(t, d))
		if err != nil {
			t.Errorf("%s: Decode(%s): %v", d.Name, d.Example, err)
			continue
		}
		if _, err := k.Desired(s); err != nil {
			t.Errorf("%s: Desired(%q) of Example %s: %v", k.ID(), s, d.Example, err)
		}
	}
}

// TestDecode: each kind of TOML value, good and bad.
func TestDecode(t *testing.T) {
	type in = map[string]any
	for _, tc := range []struct {
		name string
		raw  any
		want string // setting, or the error's text when err
		err  bool
	}{
		// one of a list of strings
		{"cpu_governor", "performance", "performance", false},
		{"cpu_governor", "performace", `must be one of performance, powersave, schedutil, ondemand, conservative, userspace (did you mean "performance"?)`, true},
		{"cpu_governor", int64(1), "must be a string", true},
		{"thp_enabled", "never", "never", false},
		{"thp_defrag", "defer+madvise", "defer+madvise", false},
		{"thp_defrag", "defer madvise", "must be one of always, defer, defer+madvise, madvise, never", true},
		{"gpu_compute_mode", "prohibited", "prohibited", false},
		{"gpu_compute_mode", "exclusive_thread", "must be one of default, exclusive_process, prohibited", true},
		// EPP: a name or a raw value
		{"energy_performance_preference", "balance_power", "balance_power", false},
		{"energy_performance_preference", "128", "128", false},
		{"energy_performance_preference", "256", `must be one of default, performance, balance_performance, balance_power, power, or a raw value "0".."255"`, true},
		// integers in a range
		{"vm_swappiness", int64(200), "200", false},
		{"vm_swappiness", int64(201), "must be 0..200", true},
		{"vm_swappiness", "high", "must be an integer", true},
		{"vm_dirty_ratio", int64(-1), "must be 0..100", true},
		{"vm_zone_reclaim_mode", int64(7), "7", false},
		{"kernel_numa_balancing", int64(4), "must be 0..3", true},
		{"cstate_max_latency_us", int64(0), "0", false},
		{"cstate_max_latency_us", int64(-1), "-1", false}, // leave alone
		{"cstate_max_latency_us", int64(-2), "must be 0..1000000", true},
		{"gpu_power_limit_w", int64(400), "400", false},
		{"gpu_power_limit_w", int64(0), "default", false},
		{"gpu_power_limit_w", int64(5001), "must be 0..5000", true},
		// booleans
		{"gpu_persistence", true, "on", false},
		{"gpu_persistence", false, "off", false},
		{"gpu_persistence", "yes", "must be true or false", true},
		// [min, max] or []
		{"gpu_locked_clocks_mhz", []any{int64(1000), int64(1980)}, "1000,1980", false},
		{"gpu_locked_clocks_mhz", []any{}, "unlocked", false},
		{"gpu_locked_clocks_mhz", []any{int64(2000), int64(1000)}, "must be [min, max] in MHz (1..10000, min <= max), or [] to unlock", true},
		{"gpu_locked_clocks_mhz", []any{int64(0), int64(1000)}, "must be [min, max]", true},
		{"gpu_locked_clocks_mhz", []any{int64(1), int64(2), int64(3)}, "must be [min, max]", true},
		{"gpu_locked_clocks_mhz", "1,2", "must be [min, max]", true},
		// {mem, sm} or {}
		{"gpu_app_clocks_mhz", in{"mem": int64(2619), "sm": int64(1980)}, "2619,1980", false},
		{"gpu_app_clocks_mhz", in{}, "default", false},
		{"gpu_app_clocks_mhz", in{"mem": int64(0), "sm": int64(0)}, "default", false},
		{"gpu_app_clocks_mhz", in{"mem": int64(2619)}, "both must be 1..10000 MHz ({} resets them)", true},
		{"gpu_app_clocks_mhz", in{"mem": int64(1), "gfx": int64(2)}, `unknown key "gfx"`, true},
		{"gpu_app_clocks_mhz", in{"mem": "a"}, "must be an integer", true},
		{"gpu_app_clocks_mhz", int64(5), "must be a table", true},
	} {
		d, ok := Lookup(tc.name)
		if !ok {
			t.Fatalf("no knob %s", tc.name)
		}
		got, err := d.Decode(tc.raw)
		switch {
		case tc.err && err == nil:
			t.Errorf("%s: Decode(%#v) = %q, want error %q", tc.name, tc.raw, got, tc.want)
		case tc.err && !strings.Contains(err.Error(), tc.want):
			t.Errorf("%s: Decode(%#v): %v, want %q", tc.name, tc.raw, err, tc.want)
		case !tc.err && (err != nil || got != tc.want):
			t.Errorf("%s: Decode(%#v) = %q, %v; want %q", tc.name, tc.raw, got, err, tc.want)
		}
	}
	// The error of a key inside the value names it; a half-set pair shows
	// the zero it takes.
	d, _ := Lookup("gpu_app_clocks_mhz")
	var ve *ValueError
	if _, err := d.Decode(in{"mem": int64(1), "gfx": int64(2)}); !errors.As(err, &ve) || ve.Key != "gfx" || !ve.Unknown {
		t.Errorf("unknown key: %#v", err)
	}
	if _, err := d.Decode(in{"mem": int64(2619)}); !errors.As(err, &ve) || ve.Shown != "{mem = 2619, sm = 0}" {
		t.Errorf("half pair: %#v", err)
	}
	// Every knob rejects a value of a type none of them takes.
	for _, d := range Defs() {
		if _, err := d.Decode(3.5); err == nil {
			t.Errorf("%s accepts a float", d.Name)
		}
	}
}

// TestLeaveAlone: a Def's LeaveAlone setting decodes, and Desired answers
// it with ErrLeaveAlone.
func TestLeaveAlone(t *testing.T) {
	r := writeTree(t, smallNode().files())
	for _, k := range NodeKnobs(r, cpusetOf(t, "")) {
		d, _ := Lookup(k.ID().Name)
		if d.LeaveAlone == "" {
			continue
		}
		if _, err := k.Desired(d.LeaveAlone); !errors.Is(err, ErrLeaveAlone) {
			t.Errorf("%s: Desired(%q) = %v, want ErrLeaveAlone", k.ID(), d.LeaveAlone, err)
		}
	}
}

// TestRegisterRejects: malformed or clashing Defs panic.
func TestRegisterRejects(t *testing.T) {
	saved := registry
	t.Cleanup(func() { registry = saved })
	registry = slices.Clone(saved)
	node := func(r *Run, _ ID) Knob { return newSysctl(r.f, "vm_swappiness") }
	good := Def{Name: "x_new", Order: 5000, Doc: "d", Writes: []string{"x"}, Example: "1", Decode: decodeInt(0, 1), New: node}
	for name, d := range map[string]Def{
		"no doc":         {Name: "x", Order: 5001, Example: "1", Decode: decodeInt(0, 1), New: node},
		"no decode":      {Name: "x", Order: 5001, Doc: "d", Writes: []string{"x"}, Example: "1", New: node},
		"no example":     {Name: "x", Order: 5001, Doc: "d", Writes: []string{"x"}, Decode: decodeInt(0, 1), New: node},
		"no writes":      {Name: "x", Order: 5001, Doc: "d", Example: "1", Decode: decodeInt(0, 1), New: node},
		"no constructor": {Name: "x", Order: 5001, Doc: "d", Writes: []string{"x"}, Example: "1", Decode: decodeInt(0, 1)},
		"same name":      {Name: "cpu_governor", Order: 5001, Doc: "d", Writes: []string{"x"}, Example: "1", Decode: decodeInt(0, 1), New: node},
		"same order":     {Name: "x", Order: 10, Doc: "d", Writes: []string{"x"}, Example: "1", Decode: decodeInt(0, 1), New: node},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			Register(d)
		}()
	}
	Register(good)
	if n := Names(); n[len(n)-1] != "x_new" {
		t.Errorf("registered last by Order: %v", n)
	}
}
