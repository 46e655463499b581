package nccl

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gpuprep/lib/srunconf"
)

// Input is what Plan needs to know about one rank.
type Input struct {
	Fabrics   []srunconf.NCCLFabric // [[nccl.fabric]], in file order
	Node      string                // short host name (SLURMD_NODENAME, else hostname)
	Partition string                // SLURM_JOB_PARTITION
	Product   string                // DMI product name (Product)
	// HCAs are the HCAs nearest this rank's GPU ("mlx5_0:1"); nil when
	// none was found. HCAFrom says why those (lib/bind).
	HCAs    []string
	HCAFrom string
	// Getenv reads the environment the rank inherited; "" counts as
	// unset.
	Getenv func(string) string
}

// Var is one variable Plan sets, and where its value comes from.
type Var struct {
	Name, Value string
	// From is where Value comes from: "fabric ib-ndr", "nearest HCAs to
	// GPU 3 (same PCIe switch)", "your environment", or "forced by fabric
	// ib-ndr over your NCCL_X=...".
	From string
	// User is the value the user had set ("" when unset).
	User string
	// Kept: the user's value wins (Value == User). False when nothing was
	// set or when the fabric forces its value over the user's.
	Kept bool
}

// IBHCAName is the variable NCCL reads for the HCAs it may use.
const IBHCAName = "NCCL_IB_HCA"

// [[nccl.fabric]] ib_hca values other than a literal.
const (
	IBHCAAuto = "auto"
	IBHCAOff  = "off"
)

// planned is a value before the user's environment is consulted.
type planned struct {
	value, from, fabric string
	forced              bool
}

// Plan returns the variables for one rank, sorted by name.
//
// Every fabric that matches (Node, Partition, Product) applies in order;
// a later one replaces an earlier one's value of the same variable, its
// ib_hca decision included ("off" in a later fabric unsets what an
// earlier one chose). ib_hca "auto" (also "") sets NCCL_IB_HCA to
// "=" + the nearest HCAs: the "=" asks NCCL for exact names, since its
// default prefix match would let mlx5_1 also select mlx5_10. With no
// matching fabric NCCL_IB_HCA is still set that way; with no HCAs it is
// not set.
//
// A variable the user already set keeps the user's value unless the
// fabric that set it last names it in force.
func Plan(in Input) []Var {
	want := map[string]planned{}
	auto := func(fabric string, forced bool) {
		if len(in.HCAs) == 0 {
			delete(want, IBHCAName)
			return
		}
		from := in.HCAFrom
		if from == "" {
			from = "nearest HCAs to the rank's GPU"
		}
		want[IBHCAName] = planned{value: "=" + strings.Join(in.HCAs, ","), from: from, fabric: fabric, forced: forced}
	}
	matched := false
	for i, f := range in.Fabrics {
		if !f.Matches(in.Node, in.Partition, in.Product) {
			continue
		}
		matched = true
		name := fabricName(f, i)
		for k, v := range f.Env {
			want[k] = planned{value: v, from: "fabric " + name, fabric: name, forced: slices.Contains(f.Force, k)}
		}
		forced := slices.Contains(f.Force, IBHCAName)
		switch f.IBHCA {
		case IBHCAAuto, "":
			auto(name, forced)
		case IBHCAOff:
			delete(want, IBHCAName)
		default:
			want[IBHCAName] = planned{value: f.IBHCA, from: "fabric " + name + " (ib_hca)", fabric: name, forced: forced}
		}
	}
	if !matched {
		auto("", false)
	}
	out := make([]Var, 0, len(want))
	for name, p := range want {
		v := Var{Name: name, Value: p.value, From: p.from}
		if in.Getenv != nil {
			v.User = in.Getenv(name)
		}
		switch {
		case v.User == "":
		case v.User == p.value:
			v.Kept = true
			v.From = "your environment (" + p.from + " sets the same)"
		case p.forced:
			v.From = fmt.Sprintf("forced by fabric %s over your %s=%s", p.fabric, name, srunconf.ShowN(v.User, srunconf.ShowMax/2))
			if name == IBHCAName && !strings.HasPrefix(p.from, "fabric ") {
				v.From += ": " + p.from
			}
		default:
			v.Value, v.Kept, v.From = v.User, true, "your environment"
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b Var) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// fabricName is how --explain names fabric i: its name, else "#<i+1>" as
// config's messages do.
func fabricName(f srunconf.NCCLFabric, i int) string {
	if f.Name != "" {
		return f.Name
	}
	return "#" + strconv.Itoa(i+1)
}
