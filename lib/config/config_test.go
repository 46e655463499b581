package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
)

const examplePath = "../../examples/gpuprep.toml"

func TestDefault(t *testing.T) {
	c := Default()
	if c.File != BuiltinFile {
		t.Errorf("File = %q", c.File)
	}
	g := c.General
	if g.StateDir != "/var/lib/gpuprep" || g.Deadline != 30*time.Second || g.GPUBackend != "auto" ||
		g.MetricsDir != MetricsDirAuto || g.DrainReason || g.LogLevel != "info" ||
		g.DeadJobGrace != 5*time.Minute || g.MaxJobAge != 0 {
		t.Errorf("general = %+v", g)
	}
	s := c.Selection
	if s.DefaultProfile != "default" || !slices.Equal(s.AllowedProfiles, []string{"*"}) ||
		s.ConstraintPrefix != "gpuprep_" || s.CommentKey != "gpuprep" {
		t.Errorf("selection = %+v", s)
	}
	if c.Gres.Name != "gpu" || c.Gres.NUMAAsSocket != Auto {
		t.Errorf("gres = %+v", c.Gres)
	}
	// Every scalar setting has a built-in value: a new key cannot be added
	// without one (bools excepted: false is a value; so is max_job_age's 0,
	// "off").
	for _, sec := range []any{c.General, c.Selection, c.Gres} {
		v := reflect.ValueOf(sec)
		for i := range v.NumField() {
			if v.Type().Field(i).Name == "MaxJobAge" {
				continue
			}
			if f := v.Field(i); f.Kind() != reflect.Bool && f.Kind() != reflect.Map && f.IsZero() {
				t.Errorf("%s.%s has no built-in value", v.Type().Name(), v.Type().Field(i).Name)
			}
		}
	}
	d, err := c.Profile("default")
	if err != nil {
		t.Fatal(err)
	}
	if val(d.Knobs, "cpu_governor") != "performance" || val(d.Knobs, "thp_enabled") != "madvise" || val(d.Knobs, "kernel_numa_balancing") != "0" ||
		val(d.Knobs, "gpu_persistence") != "on" || d.IsSet("gpu_locked_clocks_mhz") || val(d.Invariants, "gpu_persistence") != "on" {
		t.Errorf("default profile = %+v", d)
	}
	b, err := c.Profile("benchmark")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.Chain, []string{"benchmark", "default"}) || val(b.Knobs, "cstate_max_latency_us") != "10" || val(b.Knobs, "cpu_governor") != "performance" {
		t.Errorf("benchmark profile = %+v", b)
	}
	if val(c.Defaults, "gpu_locked_clocks_mhz") != "unlocked" || val(c.Defaults, "gpu_app_clocks_mhz") != "default" || val(c.Defaults, "gpu_power_limit_w") != "default" {
		t.Errorf("defaults = %+v", c.Defaults)
	}
}

// Parse with empty input is the built-in configuration, named after the file.
func TestParseEmptyIsDefault(t *testing.T) {
	c, err := Parse("empty.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	d := Default()
	d.File = "empty.toml"
	if !reflect.DeepEqual(c, d) {
		t.Errorf("Parse(empty) = %+v\nwant %+v", c, d)
	}
}

// exampleSetting is a commented-out setting of examples/gpuprep.toml: "#"
// and then anything but a space ("# " starts prose).
var exampleSetting = regexp.MustCompile(`(?m)^#([^ #\n].*)$`)

// TestExample: examples/gpuprep.toml is valid, and so is it with every
// commented-out setting uncommented (what an admin may do); between them
// they set every key of the schema.
func TestExample(t *testing.T) {
	data, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	uncommented := exampleSetting.ReplaceAll(data, []byte("$1"))
	if string(uncommented) == string(data) {
		t.Error("examples/gpuprep.toml has no commented-out setting")
	}
	have := map[string]bool{}
	for _, text := range [][]byte{data, uncommented} {
		c, err := Parse(examplePath, text)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range c.ProfileNames() {
			if _, err := c.Profile(name); err != nil {
				t.Errorf("profile %s: %v", name, err)
			}
		}
		var m map[string]any
		md, err := toml.Decode(string(text), &m)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range md.Keys() {
			have[schemaPattern(k)] = true
		}
	}
	// Every key of the schema appears in the example. [defaults] and
	// invariants take the knob keys a profile does, documented under the
	// profiles: they need only appear.
	for _, pat := range schemaKeys() {
		switch {
		case strings.HasPrefix(pat, "defaults."):
			pat = "defaults"
		case strings.HasPrefix(pat, "profiles.*.invariants."):
			pat = "profiles.*.invariants"
		}
		if !have[pat] {
			t.Errorf("examples/gpuprep.toml does not set %s", pat)
		}
	}
}

// schemaPattern turns a file's key into the schema's pattern for it: map
// keys become "*".
func schemaPattern(key toml.Key) string {
	var out []string
	typ := reflect.TypeFor[Config]()
	for _, k := range key {
		typ = deref(typ)
		switch typ.Kind() {
		case reflect.Map:
			out = append(out, "*")
			typ = typ.Elem()
		case reflect.Struct:
			out = append(out, k)
			if ft := SchemaFieldType(typ, k); ft != nil {
				typ = ft
			}
		default:
			out = append(out, k)
		}
	}
	return strings.Join(out, ".")
}

func TestSchemaKeysCoverKnobs(t *testing.T) {
	keys := schemaKeys()
	for _, k := range KnobNames() {
		if !slices.ContainsFunc(keys, func(s string) bool { return strings.HasPrefix(s, "profiles.*."+k) }) {
			t.Errorf("knob %s is not under profiles.*", k)
		}
	}
}

// val is the setting k gives a knob, or "<unset>".
func val(k Knobs, name string) string {
	if s, ok := k.Setting(name); ok {
		return s
	}
	return "<unset>"
}

func TestLayering(t *testing.T) {
	c, err := Parse("site.toml", []byte(`
[general]
deadline = "10s"
[gres.type_names]
h100_80gb_hbm3 = "h100"
[defaults]
vm_swappiness = 60
[profiles.default]
cpu_governor = "powersave"
[profiles.mine]
inherits = "benchmark"
gpu_power_limit_w = 400
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.General.Deadline != 10*time.Second || c.General.StateDir != "/var/lib/gpuprep" {
		t.Errorf("general = %+v", c.General)
	}
	// [defaults] merges with the built-in one.
	if val(c.Defaults, "vm_swappiness") != "60" || val(c.Defaults, "gpu_compute_mode") != "default" {
		t.Errorf("defaults = %+v", c.Defaults)
	}
	// The site's default profile replaces the built-in one as a whole...
	d, _ := c.Profile("default")
	if val(d.Knobs, "cpu_governor") != "powersave" || d.IsSet("gpu_persistence") || d.Invariants.IsSet("gpu_persistence") {
		t.Errorf("default = %+v", d)
	}
	// ...and the built-in benchmark, which inherits it, sees the site's.
	m, err := c.Profile("mine")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Chain, []string{"mine", "benchmark", "default"}) || val(m.Knobs, "cpu_governor") != "powersave" ||
		val(m.Knobs, "cstate_max_latency_us") != "10" || val(m.Knobs, "gpu_power_limit_w") != "400" {
		t.Errorf("mine = %+v", m)
	}
	if c.Gres.TypeName("H100_80GB_HBM3") != "h100" || c.Gres.TypeName("a100") != "a100" {
		t.Errorf("type names = %v", c.Gres.TypeNames)
	}
	// The built-in configuration is not changed by a parse.
	if !Default().Profiles["default"].IsSet("cpu_governor") {
		t.Error("Parse changed the built-in defaults")
	}
}

func TestInheritance(t *testing.T) {
	c, err := Parse("g.toml", []byte(`
[profiles.a]
cpu_governor = "performance"
vm_swappiness = 10
cstate_max_latency_us = 5
required = ["cpu_governor"]
[profiles.a.invariants]
gpu_persistence = true
[profiles.b]
inherits = "a"
vm_swappiness = 20
[profiles.b.invariants]
thp_enabled = "never"
[profiles.c]
inherits = "b"
cstate_max_latency_us = -1
thp_enabled = "never"
required = []
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Profile("c")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Chain, []string{"c", "b", "a"}) {
		t.Errorf("chain = %v", p.Chain)
	}
	if val(p.Knobs, "cpu_governor") != "performance" || val(p.Knobs, "vm_swappiness") != "20" || val(p.Knobs, "thp_enabled") != "never" {
		t.Errorf("knobs = %v", p.Names())
	}
	if p.IsSet("cstate_max_latency_us") {
		t.Errorf("cstate -1 should resolve to leave-alone, got %s", val(p.Knobs, "cstate_max_latency_us"))
	}
	if len(p.Required) != 0 || p.IsRequired("cpu_governor") {
		t.Errorf("required = %v", p.Required)
	}
	if !slices.Equal(p.Invariants.Names(), []string{"thp_enabled", "gpu_persistence"}) {
		t.Errorf("invariants = %v", p.Invariants.Names())
	}
	b, _ := c.Profile("b")
	if !b.IsRequired("cpu_governor") {
		t.Errorf("b should inherit required, got %v", b.Required)
	}
	// The resolved profile shares no memory with the specs.
	p.set["cpu_governor"] = "x"
	if val(c.Profiles["a"].Knobs, "cpu_governor") != "performance" {
		t.Error("Profile aliases the spec")
	}
	if _, err := c.Profile("nope"); !errors.Is(err, ErrUnknownProfile) {
		t.Errorf("Profile(nope) = %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"unknown key", "[profiles.default]\ncpu_govenor = \"performance\"\n",
			`g.toml:2: unknown key "profiles.default.cpu_govenor" (did you mean "profiles.default.cpu_governor"?)`},
		{"unknown top", "\n\nstate_dir = \"/x\"\n", `g.toml:3: unknown key "state_dir" (did you mean "general.state_dir"?)`},
		{"unknown section", "[genral]\nlog_level = \"info\"\n", `g.toml:1: unknown key "genral" (did you mean "general"?)`},
		{"case", "[General]\n", `g.toml:1: unknown key "General" (did you mean "general"?)`},
		{"unknown in implied table", "[mystery.sub]\nx = 1\n", `g.toml:1: unknown key "mystery"`},
		{"unknown app clock key", "[profiles.p]\ngpu_app_clocks_mhz = { mem = 1, sm = 2, gfx = 3 }\n",
			`g.toml:2: unknown key "profiles.p.gpu_app_clocks_mhz.gfx"`},
		{"keys before values", "[general]\nlog_level = \"x\"\nbogus = 1\n", `g.toml:3: unknown key "general.bogus"`},
		{"first error wins", "[general]\nlog_level = \"x\"\n[profiles.x]\nvm_swappiness = 201\n", `g.toml:2: general.log_level = "x": must be one of debug, info, warn, error`},
		{"wrong type int", "[profiles.fast]\n\nvm_swappiness = \"high\"\n", `g.toml:3: profiles.fast.vm_swappiness = "high": must be an integer`},
		{"wrong type bool", "[general]\ndrain_reason = \"yes\"\n", `g.toml:2: general.drain_reason = "yes": must be true or false`},
		{"wrong type list", "[selection]\nallowed_profiles = \"default\"\n", `g.toml:2: selection.allowed_profiles = "default": must be a list of strings`},
		{"wrong list elem", "[selection]\nallowed_profiles = [\"a\", 1]\n", `g.toml:2: selection.allowed_profiles = ["a", 1]: must be a list of strings`},
		{"table expected", "profiles = 3\n", `g.toml:1: profiles = 3: must be a table`},
		{"profile not table", "[profiles]\nfast = \"x\"\n", `g.toml:2: profiles.fast = "x": must be a table`},
		{"duration int", "[general]\ndeadline = 30\n", `g.toml:2: general.deadline = 30: must be a duration such as "30s" or "1m30s"`},
		{"duration bad", "[general]\ndeadline = \"30 s\"\n", `g.toml:2: general.deadline = "30 s": must be a duration`},
		{"duration range", "[general]\ndeadline = \"2h\"\n", `g.toml:2: general.deadline = "2h0m0s": must be 100ms..1h0m0s`},
		{"grace range", "[general]\ndead_job_grace = \"48h\"\n", `g.toml:2: general.dead_job_grace = "48h0m0s": must be 0s..24h0m0s`},
		{"max age too short", "[general]\nmax_job_age = \"10m\"\n", `g.toml:2: general.max_job_age = "10m0s": must be 0s (off) or at least 1h0m0s`},
		{"swappiness", "[profiles.fast]\nvm_swappiness = 500\n", `g.toml:2: profiles.fast.vm_swappiness = 500: must be 0..200`},
		{"dirty ratio", "[profiles.fast]\nvm_dirty_ratio = -1\n", `g.toml:2: profiles.fast.vm_dirty_ratio = -1: must be 0..100`},
		{"dirty order", "[profiles.fast]\nvm_dirty_ratio = 10\nvm_dirty_background_ratio = 20\n",
			`g.toml:3: profiles.fast.vm_dirty_background_ratio = 20: must be below vm_dirty_ratio (10)`},
		{"inherited value, line of the profile", "[profiles.p]\ninherits = \"default\"\nvm_dirty_background_ratio = 20\n[profiles.c]\ninherits = \"p\"\nvm_dirty_ratio = 10\n",
			`g.toml:4: profiles.c.vm_dirty_background_ratio = 20: must be below vm_dirty_ratio (10)`},
		{"empty key", "[mig.layout]\n\"\" = []\n", `g.toml:2: mig.layout."": the selector must be`},
		{"quoted unknown key", "\"a b\" = 1\n", `g.toml:1: unknown key "a b"`},
		{"zone reclaim", "[defaults]\nvm_zone_reclaim_mode = 8\n", `g.toml:2: defaults.vm_zone_reclaim_mode = 8: must be 0..7`},
		{"numa balancing", "[profiles.x]\nkernel_numa_balancing = 4\n", `must be 0..3`},
		{"cstate", "[profiles.x]\ncstate_max_latency_us = -2\n", `g.toml:2: profiles.x.cstate_max_latency_us = -2: must be 0..1000000`},
		{"governor typo", "[profiles.x]\ncpu_governor = \"performace\"\n", `(did you mean "performance"?)`},
		{"epp", "[profiles.x]\nenergy_performance_preference = \"fast\"\n", `must be one of default, performance`},
		{"thp", "[profiles.x.invariants]\nthp_enabled = \"sometimes\"\n", `g.toml:2: profiles.x.invariants.thp_enabled = "sometimes": must be one of always, madvise, never`},
		{"thp defrag", "[profiles.x]\nthp_defrag = \"defer madvise\"\n", `must be one of always, defer, defer+madvise, madvise, never`},
		{"compute mode", "[profiles.x]\ngpu_compute_mode = \"exclusive_thread\"\n", `must be one of default, exclusive_process, prohibited`},
		{"clocks shape", "[profiles.x]\ngpu_locked_clocks_mhz = [1, 2, 3]\n", `g.toml:2: profiles.x.gpu_locked_clocks_mhz = [1, 2, 3]: must be [min, max]`},
		{"clocks order", "[profiles.x]\ngpu_locked_clocks_mhz = [2000, 1000]\n", `min <= max`},
		{"clocks range", "[profiles.x]\ngpu_locked_clocks_mhz = [0, 1000]\n", `must be [min, max] in MHz (1..10000`},
		{"app clocks half", "[profiles.x]\ngpu_app_clocks_mhz = { mem = 2619 }\n", `g.toml:2: profiles.x.gpu_app_clocks_mhz = {mem = 2619, sm = 0}: both must be 1..10000 MHz`},
		{"power", "[profiles.x]\ngpu_power_limit_w = 100000\n", `must be 0..5000`},
		{"tristate", "[gres]\nnuma_as_socket = \"yes\"\n", `g.toml:2: gres.numa_as_socket = "yes": must be true, false or "auto"`},
		{"state dir relative", "[general]\nstate_dir = \"var/lib\"\n", `general.state_dir = "var/lib": must be an absolute path`},
		{"state dir empty", "[general]\nstate_dir = \"\"\n", `must be an absolute path`},
		{"metrics dir relative", "[general]\nmetrics_dir = \"textfile\"\n", `g.toml:2: general.metrics_dir = "textfile": must be "auto", "" (no metrics) or an absolute path`},
		{"metrics dir Auto", "[general]\nmetrics_dir = \"Auto\"\n", `must be "auto", "" (no metrics) or an absolute path`},
		{"metrics dir root", "[general]\nmetrics_dir = \"/\"\n", `g.toml:2: general.metrics_dir = "/": must not be /`},
		{"state dir root", "[general]\nstate_dir = \"/\"\n", `must not be /`},
		{"backend", "[general]\ngpu_backend = \"cuda\"\n", `general.gpu_backend = "cuda": must be one of auto, nvml, procfs, none, mock:<name>`},
		{"default profile", "[selection]\ndefault_profile = \"fast\"\n", `g.toml:2: selection.default_profile = "fast": no such profile (defined: benchmark, default)`},
		{"allowed", "[selection]\nallowed_profiles = [\"benchmrk\"]\n", `selection.allowed_profiles: "benchmrk": no such profile`},
		{"prefix", "[selection]\nconstraint_prefix = \"a&b\"\n", `may hold only letters`},
		{"comment key", "[selection]\ncomment_key = \"gpu prep\"\n", `may hold only letters`},
		{"profile name", "[profiles.\"fast lane\"]\n", `g.toml:1: profile name "fast lane": must be letters, digits`},
		{"profile name newline", "[profiles.\"a\\nb\"]\n", `profile name "a\nb"`},
		{"unknown parent", "[profiles.x]\ninherits = \"nope\"\n", `g.toml:2: profiles.x.inherits = "nope": no such profile`},
		{"cycle", "[profiles.a]\ninherits = \"b\"\n[profiles.b]\ninherits = \"c\"\n[profiles.c]\ninherits = \"a\"\n",
			`g.toml:2: profiles.a.inherits = "b": inheritance cycle a -> b -> c -> a`},
		{"self cycle", "[profiles.a]\ninherits = \"a\"\n", `inheritance cycle a -> a`},
		{"cycle through built-in", "[profiles.default]\ninherits = \"benchmark\"\n", `g.toml:2: profiles.default.inherits = "benchmark": inheritance cycle default -> benchmark -> default`},
		{"required unknown", "[profiles.x]\nrequired = [\"cpu_govenor\"]\n", `"cpu_govenor" is not a knob (did you mean "cpu_governor"?)`},
		{"required unset", "[profiles.x]\nrequired = [\"gpu_power_limit_w\"]\n", `g.toml:2: profiles.x.required: "gpu_power_limit_w" is required but profile "x" does not set it`},
		{"gres name", "[gres]\nname = \"GPU\"\n", `gres.name = "GPU": must be lower-case`},
		{"type name", "[gres.type_names]\nh100 = \"h 100\"\n", `g.toml:2: gres.type_names.h100 = "h 100"`},
		{"type dup", "[gres.type_names]\nh100 = \"a\"\nH100 = \"b\"\n", `same type as`},
		{"mig profile", "[mig.layout]\nall = [\"3g40gb\"]\n", `g.toml:2: mig.layout.all: "3g40gb" is not a MIG profile name`},
		{"mig index", "[mig.layout]\n\"99\" = []\n", `a GPU index must be 0..63`},
		{"syntax", "[general\n", `to end table name`},
		{"syntax later line", "[general]\nlog_level = \n", `g.toml:2: `},
		{"duplicate key", "[general]\nlog_level = \"info\"\nlog_level = \"debug\"\n", `g.toml:3: `},
		{"array of tables", "[[profiles]]\nname = \"x\"\n", `g.toml:1: profiles = [{name = "x"}]: must be a table`},
		{"control chars", "[profiles.x]\ncpu_governor = \"\\u001b[31mred\"\n", `"\x1b[31mred"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("g.toml", []byte(tc.in))
			if err == nil {
				t.Fatalf("no error; want %s", tc.want)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) {
				t.Errorf("error\n  %s\nwant it to contain\n  %s", msg, tc.want)
			}
			var e *Error
			if !errors.As(err, &e) || e.File != "g.toml" || strings.ContainsAny(msg, "\n\r") || !strings.HasPrefix(msg, "g.toml:") {
				t.Errorf("error %q is not a one-line *Error for g.toml", msg)
			}
		})
	}
}

func TestErrorFields(t *testing.T) {
	_, err := Parse("/etc/gpuprep/gpuprep.toml", []byte("\n[profiles.default]\n\ncpu_govenor = 1\n"))
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("%T %v", err, err)
	}
	if e.Line != 4 || e.Key != "profiles.default.cpu_govenor" || e.File != "/etc/gpuprep/gpuprep.toml" {
		t.Errorf("%+v", e)
	}
	_, err = Parse("x.toml", []byte("a = [1,\n"))
	var pe toml.ParseError
	if !errors.As(err, &pe) {
		t.Errorf("syntax error does not wrap toml.ParseError: %v", err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "gpuprep.toml")
	c, err := load(missing, missing)
	if err != nil || c.File != BuiltinFile {
		t.Errorf("missing default file: %v, %v", c, err)
	}
	if _, err := load(missing, "/etc/gpuprep/gpuprep.toml"); err == nil ||
		err.Error() != missing+": cannot read: no such file or directory" || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory: %v", err)
	}
	good := filepath.Join(dir, "good.toml")
	os.WriteFile(good, []byte("[general]\nlog_level = \"debug\"\n"), 0o644)
	if c, err := Load(good); err != nil || c.General.LogLevel != "debug" || c.File != good {
		t.Errorf("good: %v %v", c, err)
	}
	os.Chmod(good, 0o666)
	if _, err := Load(good); err == nil || !strings.Contains(err.Error(), "every user can write") {
		t.Errorf("world-writable: %v", err)
	}
	big := filepath.Join(dir, "big.toml")
	os.WriteFile(big, make([]byte, maxFileSize+1), 0o644)
	if _, err := Load(big); err == nil || !strings.HasPrefix(err.Error(), big+": larger than") {
		t.Errorf("big: %v", err)
	}
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("[general]\n\nlog_level = \"loud\"\n"), 0o644)
	if _, err := Load(bad); err == nil || !strings.HasPrefix(err.Error(), bad+":3: general.log_level") {
		t.Errorf("bad: %v", err)
	}
}

func BenchmarkParseExample(b *testing.B) {
	data, err := os.ReadFile(examplePath)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Parse(examplePath, data); err != nil {
			b.Fatal(err)
		}
	}
}
