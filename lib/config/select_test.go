package config

import (
	"slices"
	"strings"
	"testing"
)

func TestSelect(t *testing.T) {
	cfg, err := Parse("g.toml", []byte(`
[selection]
allowed_profiles = ["benchmark", "fast"]
[profiles.fast]
inherits = "default"
[profiles.secret]
inherits = "default"
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		constraints string
		comment     string
		profile     string
		source      Source
		warnings    []string // substrings, one per warning
	}{
		{"nothing", "", "", "default", FromDefault, nil},
		{"unrelated", "a100&ib", "nightly run", "default", FromDefault, nil},
		{"constraint", "gpuprep_benchmark", "", "benchmark", FromConstraint, nil},
		{"constraint expression", "a100&gpuprep_fast|x", "", "fast", FromConstraint, nil},
		{"constraint counts and brackets", "[rack1*2&gpuprep_fast*2]", "", "fast", FromConstraint, nil},
		{"constraint parens", "(h100|h200)&gpuprep_benchmark", "", "benchmark", FromConstraint, nil},
		{"negated constraint", "!gpuprep_fast", "", "default", FromDefault, nil},
		{"constraint repeated", "gpuprep_fast&gpuprep_fast", "", "fast", FromConstraint, nil},
		{"constraint several", "gpuprep_fast|gpuprep_benchmark", "", "fast", FromConstraint, []string{`constraints name several profiles ("fast", "benchmark")`}},
		{"bare prefix", "gpuprep_", "", "default", FromDefault, nil},
		{"comment alone", "", "gpuprep=benchmark", "benchmark", FromComment, nil},
		{"comment among words", "", "nightly, gpuprep=fast; owner=ml", "fast", FromComment, nil},
		{"comment quoted", "", `run gpuprep="fast".`, "fast", FromComment, nil},
		{"comment key case", "", "GPUPrep=fast", "fast", FromComment, nil},
		{"comment other key", "", "xgpuprep=fast gpuprepx=fast", "default", FromDefault, nil},
		{"comment empty value", "", "gpuprep=", "default", FromDefault, nil},
		{"comment typo", "", "gpuprep=benchmrk", "default", FromDefault,
			[]string{`profile "benchmrk" requested by --comment gpuprep=benchmrk is not defined (did you mean "benchmark"?); ignoring it, using the default profile "default"`}},
		{"constraint typo", "gpuprep_fats", "", "default", FromDefault, []string{`profile "fats" requested by --constraint=gpuprep_fats is not defined`}},
		{"not allowed", "", "gpuprep=secret", "default", FromDefault, []string{`is not allowed (allowed: benchmark, fast)`}},
		{"default always allowed", "", "gpuprep=default", "default", FromComment, nil},
		{"agree", "gpuprep_fast", "gpuprep=fast", "fast", FromConstraint, nil},
		{"disagree", "gpuprep_fast", "gpuprep=benchmark", "fast", FromConstraint, []string{`constraint asks for profile "fast", comment for "benchmark"; the constraint wins`}},
		{"bad constraint good comment", "gpuprep_nope", "gpuprep=benchmark", "benchmark", FromComment, []string{`profile "nope" requested by --constraint=gpuprep_nope is not defined; ignoring it`}},
		{"both bad", "gpuprep_nope", "gpuprep=secret", "default", FromDefault, []string{`"nope"`, `"secret"`}},
		{"hostile", "", "gpuprep=\x1b[2J\nrm", "default", FromDefault, []string{`"\x1b[2J"`}},
		{"long", "", "gpuprep=" + strings.Repeat("a", 500), "default", FromDefault, []string{strings.Repeat("a", 64) + `..."`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel := Select(cfg, JobSelector{Constraints: tc.constraints, Comment: tc.comment})
			if sel.Profile != tc.profile || sel.Source != tc.source {
				t.Errorf("got %q from %s, want %q from %s (warnings %q)", sel.Profile, sel.Source, tc.profile, tc.source, sel.Warnings)
			}
			if len(sel.Warnings) != len(tc.warnings) {
				t.Fatalf("warnings %q, want %d", sel.Warnings, len(tc.warnings))
			}
			for i, w := range tc.warnings {
				if !strings.Contains(sel.Warnings[i], w) {
					t.Errorf("warning %q does not contain %q", sel.Warnings[i], w)
				}
				if strings.ContainsAny(sel.Warnings[i], "\n\r\x1b") || len(sel.Warnings[i]) > 400 {
					t.Errorf("warning %q is not one safe line", sel.Warnings[i])
				}
			}
		})
	}
}

func TestSelectDisabled(t *testing.T) {
	cfg, err := Parse("g.toml", []byte("[selection]\nconstraint_prefix = \"\"\ncomment_key = \"\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	sel := Select(cfg, JobSelector{Constraints: "gpuprep_benchmark", Comment: "gpuprep=benchmark"})
	if sel.Profile != "default" || len(sel.Warnings) != 0 {
		t.Errorf("%+v", sel)
	}
}

func TestSelectNoChoice(t *testing.T) {
	cfg, err := Parse("g.toml", []byte("[selection]\nallowed_profiles = []\n"))
	if err != nil {
		t.Fatal(err)
	}
	sel := Select(cfg, JobSelector{Comment: "gpuprep=benchmark"})
	if sel.Profile != "default" || !strings.Contains(sel.Warnings[0], "jobs may not choose a profile here") {
		t.Errorf("%+v", sel)
	}
	if !cfg.Allowed("default") || cfg.Allowed("benchmark") || cfg.Allowed("nope") {
		t.Error("Allowed")
	}
}

func TestSelectorFromEnv(t *testing.T) {
	env := map[string]string{"SLURM_JOB_CONSTRAINTS": "a&b", "SLURM_JOB_COMMENT": "c"}
	got := SelectorFromEnv(func(k string) string { return env[k] })
	if got != (JobSelector{Constraints: "a&b", Comment: "c"}) {
		t.Errorf("%+v", got)
	}
	if s := Select(nil, got); s.Profile != "default" {
		t.Errorf("Select(nil) = %+v", s)
	}
}

func TestConstraintNames(t *testing.T) {
	for in, want := range map[string][]string{
		"":                          nil,
		"gpuprep_a":                 {"a"},
		"x&gpuprep_a|gpuprep_b":     {"a", "b"},
		"[gpuprep_a*2&gpuprep_b*1]": {"a", "b"},
		"!gpuprep_a&gpuprep_b":      {"b"},
		"gpuprep_a,gpuprep_a":       {"a"},
		"notgpuprep_a":              nil,
	} {
		if got := constraintNames(in, "gpuprep_"); !slices.Equal(got, want) {
			t.Errorf("constraintNames(%q) = %q, want %q", in, got, want)
		}
	}
}
