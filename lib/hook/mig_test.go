package hook

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
)

func TestCompareMIG(t *testing.T) {
	d := gpu.Device{Index: 3, BusID: "0000:9a:00.0"}
	on := func(profiles ...string) gpu.MIGState {
		st := gpu.MIGState{Capable: true, Current: true, Pending: true}
		for i, p := range profiles {
			st.Devices = append(st.Devices, gpu.MIGDevice{Profile: p, GI: i + 1})
		}
		return st
	}
	off := gpu.MIGState{Capable: true}
	seven := []string{"1g.18gb", "1g.18gb", "1g.18gb", "1g.18gb", "1g.18gb", "1g.18gb", "1g.18gb"}
	const pre = "MIG mismatch on GPU 3 (0000:9a:00.0): "
	for _, tc := range []struct {
		name       string
		want       []string
		st         gpu.MIGState
		reason     string // "" = OK
		unverified bool
	}{
		{"disabled as wanted", nil, off, "", false},
		{"disabled, [] wanted", []string{}, off, "", false},
		{"same layout, another order", []string{"1g.10gb", "3g.40gb", "1g.10gb"}, on("3g.40gb", "1g.10gb", "1g.10gb"), "", false},
		{"want MIG, found disabled", seven, off, pre + "want 7x1g.18gb, found MIG disabled", false},
		{"other profiles", []string{"3g.40gb", "3g.40gb"}, on("1g.10gb", "3g.40gb", "1g.10gb"), pre + "want 2x3g.40gb, found 3g.40gb+2x1g.10gb", false},
		{"one device missing", []string{"3g.40gb", "3g.40gb"}, on("3g.40gb"), pre + "want 2x3g.40gb, found 3g.40gb", false},
		{"same count, other profile", []string{"3g.40gb", "3g.40gb"}, on("3g.40gb", "4g.40gb"), pre + "want 2x3g.40gb, found 4g.40gb+3g.40gb", false},
		{"enabled without devices", []string{"7g.80gb"}, on(), pre + "want 7g.80gb, found no MIG devices", false},
		{"want disabled, found enabled", nil, on("2g.10gb", "3g.20gb"), pre + "want MIG disabled, found MIG enabled (3g.20gb+2g.10gb)", false},
		{"want disabled, enabled empty", nil, on(), pre + "want MIG disabled, found MIG enabled (no MIG devices)", false},
		{"pending off", nil, gpu.MIGState{Current: true, Pending: false}, pre + "MIG mode pending: enabled now, disabled after the next GPU reset", false},
		{"pending on", []string{"7g.80gb"}, gpu.MIGState{Current: false, Pending: true}, pre + "MIG mode pending: disabled now, enabled after the next GPU reset", false},
		{"procfs: count matches", []string{"3g.40gb", "1g.10gb"}, on("", ""), "", true},
		{"procfs: count differs", []string{"3g.40gb", "1g.10gb"}, on("", "", ""), pre + "want 3g.40gb+1g.10gb (2 MIG devices), found 3 MIG devices, profiles unknown", true},
		{"procfs: want disabled", nil, on("", ""), pre + "want MIG disabled, found MIG enabled (2 MIG devices, profiles unknown)", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := compareMIG(d, tc.want, tc.st)
			if c.OK != (tc.reason == "") || c.Reason != tc.reason || c.ProfilesUnverified != tc.unverified {
				t.Errorf("got ok=%v unverified=%v reason %q\nwant reason %q unverified=%v", c.OK, c.ProfilesUnverified, c.Reason, tc.reason, tc.unverified)
			}
			if c.GPU != 3 || c.BusID != d.BusID {
				t.Errorf("check names GPU %d %s", c.GPU, c.BusID)
			}
		})
	}
}

func TestFormatMIGLayout(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{nil, "MIG disabled"},
		{[]string{"1g.10gb", "1g.20gb", "7g.80gb", "1g.10gb"}, "7g.80gb+1g.20gb+2x1g.10gb"},
		{[]string{"1g.10gb+me", "1g.10gb"}, "1g.10gb+1g.10gb+me"},
		{[]string{"odd", "1g.5gb"}, "1g.5gb+odd"},
	} {
		if got := formatMIGLayout(tc.in); got != tc.want {
			t.Errorf("formatMIGLayout(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// The prolog checks the MIG layout of the job's GPUs on mock:dgxa100,
// whose GPU 0 has a 3g.20gb and a 2g.10gb MIG device and the others MIG
// disabled. A match applies the profile; a mismatch fails the prolog as a
// node error with nothing changed, and the job's own profile choice does
// not make it fall back. GPUs outside the job or without a [mig.layout]
// entry are not checked.
func TestPrologChecksMIGLayout(t *testing.T) {
	e := newEnv(t, "dgxa100", "mock:dgxa100")
	withLayout := func(extra string) {
		t.Helper()
		c, err := config.Parse("test.toml", []byte(testConfig+extra))
		if err != nil {
			t.Fatal(err)
		}
		e.cfg = c
	}
	base := e.snap()
	gpu0 := e.settings(0)

	// A match: GPU 0 by index, GPU 1 by its gres type after type_names;
	// GPU 2 has no entry and is not checked.
	withLayout(`
[gres.type_names]
nvidia_a100-sxm4-40gb = "a100"
[mig.layout]
"0" = ["2g.10gb", "3g.20gb"]
"5" = ["7g.40gb"]
a100 = []
`)
	out := e.prolog(1, []int{0, 1, 2}, "")
	if len(out.Changes) == 0 || e.read("proc/sys/vm/swappiness") != "10" {
		t.Fatalf("matching layout: knobs not applied: %+v", out.Changes)
	}
	if len(out.MIG) != 3 || !out.MIG[0].OK || out.MIG[0].Want != "3g.20gb+2g.10gb" || !out.MIG[1].OK || out.MIG[1].Want != "MIG disabled" {
		t.Errorf("MIG checks %+v", out.MIG)
	}
	e.epilog(1)

	// A mismatch on GPU 0: with the default profile, with a profile the
	// job chose.
	mismatch := `
[mig.layout]
"0" = ["1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb"]
"5" = ["7g.40gb"]
`
	spoolBefore, _ := e.spool.List("")
	wantReason := "MIG mismatch on GPU 0 (" + out.MIG[0].BusID + "): want 7x1g.5gb, found 3g.20gb+2g.10gb"
	for _, tc := range []struct {
		name, comment, extra, reason string
	}{
		{"default profile", "", "", wantReason},
		{"chosen profile", "gpuprep=quiet", "", wantReason},
	} {
		withLayout(tc.extra + mismatch)
		out, err := Prolog(context.Background(), e.opts(2, []int{1, 0}, tc.comment))
		if err == nil || !IsNodeError(err) || err.Error() != tc.reason {
			t.Errorf("%s: error %v\nwant %s", tc.name, err, tc.reason)
			continue
		}
		if out.Fallback != "" || len(out.Changes) != 0 || len(out.MIG) != 1 || out.MIG[0].OK {
			t.Errorf("%s: outcome fallback %q changes %v MIG %+v", tc.name, out.Fallback, out.Changes, out.MIG)
		}
		if d := e.snap().Diff(base, 5); len(d) != 0 {
			t.Errorf("%s: a failed MIG check changed the node: %v", tc.name, d)
		}
		if s := e.settings(0); !reflect.DeepEqual(s, gpu0) {
			t.Errorf("%s: GPU 0 settings %+v, want %+v", tc.name, s, gpu0)
		}
		if names, _ := e.spool.List(""); !slices.Equal(names, spoolBefore) {
			t.Errorf("%s: a failed MIG check wrote the spool: %v", tc.name, names)
		}
	}

	// GPU 0's layout mismatches, but the job has GPUs 1 and 2 only.
	out = e.prolog(3, []int{1, 2}, "")
	if len(out.MIG) != 0 || e.read("proc/sys/vm/swappiness") != "10" {
		t.Errorf("GPU outside the job checked: %+v", out.MIG)
	}
	e.epilog(3)
}
