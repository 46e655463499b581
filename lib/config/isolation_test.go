package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestIsolationSection(t *testing.T) {
	c, err := Parse("g.toml", []byte("[isolation]\nexclude = [\"munge.service\", \"docker-*.scope\"]\n\n[profiles.default]\nhousekeeping_cpus = {cores_per_socket = 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Isolation.Exclude, []string{"munge.service", "docker-*.scope"}) || c.Isolation.IRQs {
		t.Errorf("isolation = %+v", c.Isolation)
	}
	p, _ := c.Profile("default")
	if s, ok := p.Setting("housekeeping_cpus"); !ok || s != "cores_per_socket:2" {
		t.Errorf("housekeeping_cpus = %q, %v", s, ok)
	}
	for _, tc := range []struct{ in, want string }{
		{"[isolation]\nexclude = [\"ok.service\",\n  \"a/b\"]\n", `g.toml:2: isolation.exclude: "a/b" is not a unit name or pattern`},
		{"[isolation]\nexclude = [\"[x\"]\n", `g.toml:2: isolation.exclude: "[x" is not a unit name`},
		{"[isolation]\nirqs = true\n", "g.toml:2: isolation.irqs = true: interrupts are placed by the profile knob irq_affinity = true (shared by the jobs on the node, with housekeeping_cpus from the same profile); remove irqs from [isolation]"},
		{"[isolation]\nexclude = \"munge.service\"\n", "g.toml:2: isolation.exclude"},
		{"[isolation]\nexcludes = []\n", `g.toml:2: unknown key "isolation.excludes" (did you mean "isolation.exclude"?)`},
		{"[profiles.default]\nhousekeeping_cpus = \"0-a\"\n", "g.toml:2: profiles.default.housekeeping_cpus"},
		{"[profiles.default]\nhousekeeping_cpus = {cores_per_numa = 0}\n", "cores_per_numa must be an integer 1..64"},
	} {
		_, err := Parse("g.toml", []byte(tc.in))
		var e *Error
		if err == nil || !errors.As(err, &e) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want it to contain %s", tc.in, err, tc.want)
		}
	}
}
