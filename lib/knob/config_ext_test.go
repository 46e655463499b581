package knob_test

// The registry seen from the configuration: lib/config imports lib/knob,
// so these tests live in an external test package.

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/BurntSushi/toml"

	"gpuprep/internal/testroot"
	"gpuprep/lib/config"
	"gpuprep/lib/host"
	"gpuprep/lib/knob"
)

// TestConfigKeysAreTheRegistry: the configuration's knob keys are the
// registry's, and every Def's Example is accepted as a profile key, an
// invariant and a [defaults] key, coming out as the setting its Decode
// gives.
func TestConfigKeysAreTheRegistry(t *testing.T) {
	if !slices.Equal(config.KnobNames(), knob.Names()) {
		t.Fatalf("config knob names %v\nregistry %v", config.KnobNames(), knob.Names())
	}
	for _, d := range knob.Defs() {
		var m map[string]any
		if _, err := toml.Decode("v = "+d.Example, &m); err != nil {
			t.Fatalf("%s: Example %s: %v", d.Name, d.Example, err)
		}
		want, err := d.Decode(m["v"])
		if err != nil {
			t.Fatalf("%s: Decode(%s): %v", d.Name, d.Example, err)
		}
		src := fmt.Sprintf("[defaults]\n%[1]s = %[2]s\n[profiles.x]\n%[1]s = %[2]s\n[profiles.x.invariants]\n%[1]s = %[2]s\n", d.Name, d.Example)
		c, err := config.Parse("k.toml", []byte(src))
		if err != nil {
			t.Errorf("%s = %s: %v", d.Name, d.Example, err)
			continue
		}
		p, err := c.Profile("x")
		if err != nil {
			t.Fatal(err)
		}
		for where, k := range map[string]config.Knobs{"defaults": c.Defaults, "profile": p.Knobs, "invariants": p.Invariants} {
			if got, ok := k.Setting(d.Name); !ok || got != want {
				t.Errorf("%s: %s setting %q %v, want %q", d.Name, where, got, ok, want)
			}
		}
		if !p.IsSet(d.Name) || !slices.Contains(p.Names(), d.Name) {
			t.Errorf("%s: not set in the profile", d.Name)
		}
		// A bad value is an error naming the file, line and key.
		_, err = config.Parse("k.toml", []byte(fmt.Sprintf("[profiles.x]\n\n%s = 3.5\n", d.Name)))
		var ce *config.Error
		if !errors.As(err, &ce) || ce.Line != 3 || ce.Key != "profiles.x."+d.Name {
			t.Errorf("%s = 3.5: %v", d.Name, err)
		}
	}
}

// TestExampleDocumentsEveryKnob: examples/gpuprep.toml sets or mentions
// every registered knob, and the admin's guide (docs/admin.md) names each.
func TestExampleDocumentsEveryKnob(t *testing.T) {
	for _, file := range []string{"../../examples/gpuprep.toml", "../../docs/admin.md"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range knob.Names() {
			if !regexp.MustCompile(`\b` + n + `\b`).Match(data) {
				t.Errorf("%s does not mention %s", file, n)
			}
		}
	}
}

// TestBuiltinProfilesDesired: the built-in profiles' settings are accepted
// by the knobs' Desired on every fixture root where the knob exists.
func TestBuiltinProfilesDesired(t *testing.T) {
	c := config.Default()
	for _, root := range testroot.Names() {
		t.Run(root, func(t *testing.T) {
			r := host.NewRoot(testroot.Shared(t, root))
			for _, name := range c.ProfileNames() {
				prof, err := c.Profile(name)
				if err != nil {
					t.Fatal(err)
				}
				for _, k := range knob.Catalog(knob.Env{Root: r}) {
					s, ok := prof.Setting(k.ID().Name)
					if !ok {
						continue
					}
					if _, err := k.Desired(s); err != nil && !errors.Is(err, knob.ErrUnsupported) {
						t.Errorf("profile %s: %s: Desired(%q): %v", name, k.ID(), s, err)
					}
				}
			}
			// The built-in [defaults] too.
			for _, k := range knob.Catalog(knob.Env{Root: r}) {
				if s, ok := c.Defaults.Setting(k.ID().Name); ok {
					if _, err := k.Desired(s); err != nil && !errors.Is(err, knob.ErrUnsupported) {
						t.Errorf("defaults: %s: Desired(%q): %v", k.ID(), s, err)
					}
				}
			}
		})
	}
}
