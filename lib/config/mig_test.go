package config

import (
	"slices"
	"strings"
	"testing"
)

func TestMIGLayoutFor(t *testing.T) {
	c, err := Parse("g.toml", []byte(`
[mig]
reconfigure = true
[mig.layout]
all = ["7g.80gb"]
h100 = []
"2" = {"3g.40gb" = 2}
"NVIDIA H200" = {"1g.18gb" = 7}
[mig.nodes."gpu[01-04]".layout]
all = ["4g.40gb", "3g.40gb"]
[mig.partitions.inference.layout]
h100 = {"1g.10gb" = 7, "1c.3g.40gb" = 0}
[mig.requests.small.layout]
all = {"2g.20gb" = 3}
`))
	if err != nil {
		t.Fatal(err)
	}
	seven := slices.Repeat([]string{"1g.10gb"}, 7)
	for _, tc := range []struct {
		name string
		g    MIGGPU
		w    MIGWhere
		want []string
		from string
	}{
		{"index beats type", MIGGPU{2, "NVIDIA H100 80GB HBM3", "h100"}, MIGWhere{}, []string{"3g.40gb", "3g.40gb"}, "mig"},
		{"type, any case", MIGGPU{0, "NVIDIA H100 80GB HBM3", "H100"}, MIGWhere{}, []string{}, "mig"},
		{"model", MIGGPU{0, "nvidia h200", "h200"}, MIGWhere{}, slices.Repeat([]string{"1g.18gb"}, 7), "mig"},
		{"all", MIGGPU{0, "NVIDIA A100", "a100"}, MIGWhere{}, []string{"7g.80gb"}, "mig"},
		{"node by hostlist", MIGGPU{0, "", "a100"}, MIGWhere{Node: "gpu03"}, []string{"4g.40gb", "3g.40gb"}, "mig.nodes.gpu[01-04]"},
		{"node outside the hostlist", MIGGPU{0, "", "a100"}, MIGWhere{Node: "gpu05"}, []string{"7g.80gb"}, "mig"},
		{"partition beats node", MIGGPU{0, "", "h100"}, MIGWhere{Node: "gpu03", Partition: "inference"}, seven, "mig.partitions.inference"},
		{"partition without a matching selector", MIGGPU{0, "", "a100"}, MIGWhere{Node: "gpu03", Partition: "inference"}, []string{"4g.40gb", "3g.40gb"}, "mig.nodes.gpu[01-04]"},
		{"request beats all", MIGGPU{2, "", "h100"}, MIGWhere{Node: "gpu03", Partition: "inference", Request: "small"}, []string{"2g.20gb", "2g.20gb", "2g.20gb"}, "mig.requests.small"},
	} {
		got, from, ok := c.MIG.LayoutFor(tc.g, tc.w)
		if !ok || !slices.Equal(got, tc.want) || from != tc.from {
			t.Errorf("%s: LayoutFor = %v from %q (%v), want %v from %q", tc.name, got, from, ok, tc.want, tc.from)
		}
	}
	if _, _, ok := (MIGSection{}).LayoutFor(MIGGPU{Type: "h100"}, MIGWhere{Node: "n1"}); ok {
		t.Error("an empty [mig] gave a layout")
	}
}

func TestMIGRequest(t *testing.T) {
	base := "[mig.requests.small.layout]\nall = [\"1g.10gb\"]\n"
	for _, tc := range []struct {
		conf, comment, name, warn string
	}{
		{"[mig]\nreconfigure = true\n" + base, "run gpuprep_mig=small", "small", ""},
		{"[mig]\nreconfigure = true\n" + base, "gpuprep=benchmark", "", ""},
		{"[mig]\nreconfigure = true\n" + base, "gpuprep_mig=huge", "", `MIG layout "huge" requested (gpuprep_mig=huge) is not in [mig.requests] (small); using the node's`},
		{base, "gpuprep_mig=small", "", `MIG layout "small" requested, but [mig] reconfigure is off; using the node's`},
	} {
		c, err := Parse("g.toml", []byte(tc.conf))
		if err != nil {
			t.Fatal(err)
		}
		name, warn := c.MIGRequest(tc.comment)
		if name != tc.name || warn != tc.warn {
			t.Errorf("%q: MIGRequest = %q, %q\nwant %q, %q", tc.comment, name, warn, tc.name, tc.warn)
		}
	}
}

func TestMIGConfigErrors(t *testing.T) {
	for _, tc := range []struct{ conf, want string }{
		{"[mig.layout]\nall = {\"1g.10gb\" = 9}\n", "g.toml:2: mig.layout.all"},
		{"[mig.layout]\nall = 3\n", "g.toml:2: mig.layout.all"},
		{"[mig.nodes.\"gpu[01-\".layout]\nall = []\n", "mig.nodes"},
		{"[mig.partitions.\"a b\".layout]\nall = []\n", "the name must be"},
		{"[mig.requests.x.layout]\nall = [\"2c.1g.10gb+\"]\n", "is not a MIG profile name"},
		{"[mig.requests.x]\nlayuot = {}\n", "layuot"},
	} {
		_, err := Parse("g.toml", []byte(tc.conf))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.conf, err, tc.want)
		}
	}
}
