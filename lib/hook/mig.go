package hook

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
	"gpuprep/lib/gresgen"
	"gpuprep/lib/textfmt"
)

// The [mig] check: each of the job's GPUs that [mig.layout] names must have
// the MIG layout the admin wrote, since gres.conf was written for it. A
// mismatch is the node's problem, never the job's profile's: the prolog
// fails before it changes anything and does not fall back to another
// profile (migError).

// MIGCheck is the MIG layout check of one of the job's GPUs, for the log,
// --dry-run and --json.
type MIGCheck struct {
	GPU   int    `json:"gpu"` // the GPU's index, as [mig.layout] keys name it
	BusID string `json:"bus_id"`
	Want  string `json:"want"` // "2x3g.40gb", "MIG disabled"
	// From is the [mig] table the expected layout came from: "mig" for
	// [mig.layout], "mig.nodes.<hostlist>", "mig.partitions.<name>",
	// "mig.requests.<name>".
	From  string `json:"from"`
	Found string `json:"found"` // the same form, or what was read
	OK    bool   `json:"ok"`
	// Reason is the one-line mismatch ("MIG mismatch on GPU ...") when
	// not OK.
	Reason string `json:"reason,omitempty"`
	// ProfilesUnverified: the backend cannot tell MIG profiles (procfs),
	// so only the mode and the device count were compared.
	ProfilesUnverified bool `json:"profiles_unverified,omitempty"`
	// Unreadable: the MIG state could not be read, so the GPU is not
	// reconfigured either.
	Unreadable bool `json:"unreadable,omitempty"`
	// Reconfigure is what [mig] reconfigure did: "reconfigured" (changed
	// and verified by reading back, Was holding the old layout), "would
	// reconfigure" in a dry run, or "" when it did nothing.
	Reconfigure string `json:"reconfigure,omitempty"`
	Was         string `json:"was,omitempty"`
}

// migError is a MIG layout mismatch: a node error (the prolog exits 1 and
// Slurm drains the node) that the user-profile fallback leaves alone.
type migError struct {
	node *NodeError
	// refused: [mig] reconfigure changed nothing because a GPU was not
	// safe to change (busy, held by another job, backend cannot).
	refused bool
}

func (e *migError) Error() string { return e.node.Reason }
func (e *migError) Unwrap() error { return e.node }

// isMIGError says whether err is a MIG layout mismatch.
func isMIGError(err error) bool {
	var me *migError
	return errors.As(err, &me)
}

// migWanted is the layout [mig] expects on GPU d for this job and node
// (config.MIGSection.LayoutFor), and the table that gave it.
func migWanted(o *run, d gpu.Device, w config.MIGWhere) ([]string, string, bool) {
	g := config.MIGGPU{Index: d.Index, Model: d.Name, Type: gresgen.TypeFor(d.Name, o.Config.Gres.TypeNames)}
	return o.Config.MIG.LayoutFor(g, w)
}

// checkMIG checks the MIG layout of the job's GPUs that [mig] gives a
// layout for, on this node, in the job's partition, or as the job
// requested (w). It reads the state through the backend's MIGReader and
// changes nothing. err is a migError naming every mismatch; warnings say
// what was not checked or verified.
func checkMIG(o *run, gpus []gpu.Device, w config.MIGWhere) (checks []MIGCheck, warnings []string, err error) {
	if !o.Config.MIG.Configured() || len(gpus) == 0 {
		return nil, nil, nil
	}
	var mr gpu.MIGReader
	ok := false
	if o.GPU != nil {
		mr, ok = gpu.As[gpu.MIGReader](o.GPU)
	}
	var reasons []string
	for _, d := range gpus {
		want, from, has := migWanted(o, d, w)
		if !has {
			continue
		}
		if !ok {
			name := "(none)"
			if o.GPU != nil {
				name = o.GPU.Name()
			}
			return nil, []string{fmt.Sprintf("MIG layout not checked: the GPU backend %s cannot read MIG state", name)}, nil
		}
		st, rerr := mr.MIG(d.Index)
		if rerr != nil {
			c := MIGCheck{GPU: d.Index, BusID: d.BusID, Want: formatMIGLayout(want), From: from, Found: "unreadable", Unreadable: true,
				Reason: fmt.Sprintf("MIG check on GPU %d (%s): cannot read its MIG state: %v", d.Index, d.BusID, rerr)}
			checks = append(checks, c)
			reasons = append(reasons, c.Reason)
			continue
		}
		c := compareMIG(d, want, st)
		c.From = from
		checks = append(checks, c)
		if !c.OK {
			reasons = append(reasons, c.Reason)
		} else if c.ProfilesUnverified {
			warnings = append(warnings, fmt.Sprintf("MIG on GPU %d (%s): mode and device count as expected (%s), profiles not verified: the %s backend cannot read MIG profiles",
				d.Index, d.BusID, c.Want, o.GPU.Name()))
		}
	}
	if len(reasons) == 0 {
		return checks, warnings, nil
	}
	return checks, warnings, &migError{node: &NodeError{Reason: strings.Join(reasons, "; ")}}
}

// compareMIG compares GPU d's MIG state with the expected layout (profile
// names, one per MIG device; empty: MIG disabled). Profiles are compared as
// a multiset; when the backend cannot tell profiles (a device with Profile
// ""), only the mode and the device count are, and ProfilesUnverified is
// set. It does no I/O.
func compareMIG(d gpu.Device, want []string, st gpu.MIGState) MIGCheck {
	c := MIGCheck{GPU: d.Index, BusID: d.BusID, Want: formatMIGLayout(want), Found: describeMIGState(st)}
	wantOn := len(want) > 0
	problem := ""
	switch {
	case st.Current != st.Pending:
		problem = fmt.Sprintf("MIG mode pending: %s now, %s after the next GPU reset", textfmt.EnabledDisabled(st.Current), textfmt.EnabledDisabled(st.Pending))
	case st.Current != wantOn && wantOn:
		problem = fmt.Sprintf("want %s, found %s", c.Want, c.Found)
	case st.Current != wantOn:
		c.Found = "MIG enabled (" + c.Found + ")"
		problem = fmt.Sprintf("want %s, found %s", c.Want, c.Found)
	case !wantOn:
	case slices.ContainsFunc(st.Devices, func(m gpu.MIGDevice) bool { return m.Profile == "" }):
		c.ProfilesUnverified = true
		if len(st.Devices) != len(want) {
			problem = fmt.Sprintf("want %s (%d MIG devices), found %s", c.Want, len(want), c.Found)
		}
	case c.Found != c.Want:
		problem = fmt.Sprintf("want %s, found %s", c.Want, c.Found)
	}
	if problem == "" {
		c.OK = true
		return c
	}
	c.Reason = fmt.Sprintf("MIG mismatch on GPU %d (%s): %s", d.Index, d.BusID, problem)
	return c
}

// describeMIGState is what a GPU's MIG state reads as in a reason: "MIG
// disabled", its layout ("3g.40gb+2x1g.10gb"), "no MIG devices", or a
// device count when the backend cannot tell profiles.
func describeMIGState(st gpu.MIGState) string {
	if !st.Current && !st.Pending {
		return "MIG disabled"
	}
	if len(st.Devices) == 0 {
		return "no MIG devices"
	}
	profiles := make([]string, len(st.Devices))
	for i, m := range st.Devices {
		if m.Profile == "" {
			return fmt.Sprintf("%d MIG devices, profiles unknown", len(st.Devices))
		}
		profiles[i] = m.Profile
	}
	return formatMIGLayout(profiles)
}

// formatMIGLayout writes MIG profiles as counts joined with "+", largest
// profile first ("3g.40gb+2x1g.10gb"), the same for any order of the
// input; no profile is "MIG disabled".
func formatMIGLayout(profiles []string) string {
	if len(profiles) == 0 {
		return "MIG disabled"
	}
	count := map[string]int{}
	var names []string
	for _, p := range profiles {
		if count[p] == 0 {
			names = append(names, p)
		}
		count[p]++
	}
	slices.SortStableFunc(names, compareMIGProfiles)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n
		if count[n] > 1 {
			parts[i] = strconv.Itoa(count[n]) + "x" + n
		}
	}
	return strings.Join(parts, "+")
}

// compareMIGProfiles orders MIG profile names by slices ("3g" before
// "1g"), then memory ("1g.20gb" before "1g.10gb"), then name.
func compareMIGProfiles(a, b string) int {
	ga, ma := migProfileSize(a)
	gb, mb := migProfileSize(b)
	switch {
	case ga != gb:
		return gb - ga
	case ma != mb:
		return mb - ma
	}
	return strings.Compare(a, b)
}

// migProfileSize reads "<slices>g.<memory>gb..." from a MIG profile name;
// 0, 0 for another form.
func migProfileSize(p string) (n, memGB int) {
	g, rest, ok := strings.Cut(p, "g.")
	if !ok {
		return 0, 0
	}
	n, err := strconv.Atoi(g)
	if err != nil {
		return 0, 0
	}
	digits := rest[:len(rest)-len(strings.TrimLeft(rest, "0123456789"))]
	memGB, _ = strconv.Atoi(digits)
	return n, memGB
}
