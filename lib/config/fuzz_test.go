package config

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// FuzzParse: Parse never panics; every error is one *Error line starting
// with the file name; every accepted configuration passes the strict check,
// resolves every profile and selects a defined one.
func FuzzParse(f *testing.F) {
	for _, path := range []string{examplePath, "defaults.toml"} {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"", "[general]\ndeadline = \"1s\"\n", "[profiles.a]\ninherits = \"b\"\n[profiles.b]\ninherits = \"a\"\n",
		"[profiles.x]\ngpu_locked_clocks_mhz = [1, 2]\ngpu_app_clocks_mhz = {mem = 1, sm = 2}\n",
		"[[profiles]]\n", "profiles = 1", "[profiles.\"\\n\"]\n", "[mig.layout]\nall = [\"1g.10gb\"]\n",
		"a = [1,\n", "\xff", "[gres]\nnuma_as_socket = true\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const name = "fuzz.toml"
		cfg, err := Parse(name, data)
		if err != nil {
			msg := err.Error()
			var e *Error
			if !errors.As(err, &e) || e.File != name {
				t.Fatalf("not an *Error for %s: %T %q", name, err, msg)
			}
			if !strings.HasPrefix(msg, name+":") || strings.ContainsAny(msg, "\n\r") {
				t.Fatalf("not one line starting with the file name: %q", msg)
			}
			if strings.Contains(msg, "internal error") {
				t.Fatalf("panic recovered: %q", msg)
			}
			return
		}
		// The one-parse fast path accepts nothing the strict walk rejects.
		loc := newLocator(string(data))
		if ps := checkStrict(loc.md, loc.root); loc.err != nil || len(ps) > 0 {
			t.Fatalf("accepted, but the strict check says %v %v", loc.err, ps.first(name, loc))
		}
		for _, n := range cfg.ProfileNames() {
			if _, err := cfg.Profile(n); err != nil {
				t.Fatalf("accepted config, but profile %q: %v", n, err)
			}
		}
		sel := Select(cfg, JobSelector{Constraints: "gpuprep_benchmark", Comment: "gpuprep=default"})
		if _, err := cfg.Profile(sel.Profile); err != nil {
			t.Fatalf("selected undefined profile %q", sel.Profile)
		}
	})
}

// FuzzSelect: any constraint and comment select a defined, allowed profile,
// with warnings that are single safe lines.
func FuzzSelect(f *testing.F) {
	f.Add("a100&gpuprep_benchmark|x", "nightly gpuprep=benchmark")
	f.Add("!gpuprep_x", "gpuprep=\"x\".")
	f.Add("[gpuprep_a*2", "gpuprep==;gpuprep=b")
	cfg := Default()
	f.Fuzz(func(t *testing.T, constraints, comment string) {
		sel := Select(cfg, JobSelector{Constraints: constraints, Comment: comment})
		if !cfg.Allowed(sel.Profile) {
			t.Fatalf("selected %q", sel.Profile)
		}
		for _, w := range sel.Warnings {
			if strings.ContainsAny(w, "\n\r\x1b") {
				t.Fatalf("warning not one safe line: %q", w)
			}
		}
	})
}
