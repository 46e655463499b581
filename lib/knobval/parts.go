package knobval

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/textfmt"
)

// Parts is a value made of parts, each part's key with its value: one
// value per CPU (cpu_governor), per IRQ (irq_affinity) or per service
// cgroup (housekeeping_cpus).
type Parts map[string]string

// Form is how a knob writes a value made of parts as one Value. Parts are
// written "<key>=<value>" joined by ';'. Every knob with parts uses it, so
// plans, journals and drift records carry one encoding:
//
//	0-3,8=powersave;4-7=performance        Numbered, grouped by value
//	60-61,64=0-1;160=2-3                   Numbered (IRQs), not Summed
//	init.scope=;system.slice/cron.service=0-3
//	                                       named keys, one part each
//	performance, 0-3                       Summed: every part holds it
//
// A Value is written part by part exactly when it contains '='.
type Form struct {
	// What names the value in errors ("housekeeping value").
	What string
	// Numbered says keys are numbers (CPUs, IRQs): parts holding the same
	// value are written as one group, the keys as a CPU-list-style list,
	// groups by their lowest key. Otherwise each part is written on its
	// own, by key.
	Numbered bool
	// Summed says a Value where every part holds one value is that value
	// alone ("performance", "0-3", "" for none); such a Value holds for
	// every part, whichever there are.
	Summed bool
	// Check, when set, checks a part's key and value and returns the value
	// in canonical form; key is "" for a Summed Value. Its error says what
	// is wrong without the value's name (Form adds What).
	Check func(key, value string) (string, error)
}

// Format is p as one Value: summed up where the Form is Summed and every
// part holds the same, else each part named; "" for no part.
func (f Form) Format(p Parts) Value {
	if f.Summed && len(p) > 0 {
		vals := slices.Collect(maps.Values(p))
		if !slices.ContainsFunc(vals, func(v string) bool { return v != vals[0] }) {
			return Value(vals[0])
		}
	}
	return f.FormatEach(p)
}

// FormatEach is p with every part named (grouped by value where keys are
// Numbered), even where every part holds the same; "" for no part.
func (f Form) FormatEach(p Parts) Value {
	if f.Numbered {
		return formatGroups(p)
	}
	out := make([]string, 0, len(p))
	for _, k := range slices.Sorted(maps.Keys(p)) {
		out = append(out, k+"="+p[k])
	}
	return Value(strings.Join(out, ";"))
}

// formatGroups writes numbered parts grouped by value, the groups ordered
// by their lowest key.
func formatGroups(p Parts) Value {
	groups := map[string][]int{}
	for k, v := range p {
		n, _ := strconv.Atoi(k)
		groups[v] = append(groups[v], n)
	}
	type group struct {
		keys cpuset.Set
		val  string
	}
	gs := make([]group, 0, len(groups))
	for v, keys := range groups {
		gs = append(gs, group{cpuset.New(keys...), v})
	}
	slices.SortFunc(gs, func(a, b group) int { return a.keys.Min() - b.keys.Min() })
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = g.keys.String() + "=" + g.val
	}
	return Value(strings.Join(out, ";"))
}

// IsEach says whether v names its parts (contains '=').
func IsEach(v Value) bool { return strings.Contains(string(v), "=") }

// Parse reads a Value of this Form. A Summed Value without '=' is uniform:
// all is the value every part holds and each is nil. Otherwise each holds
// the parts it names (empty for ""), all is "".
func (f Form) Parse(v Value) (all string, each Parts, err error) {
	if !IsEach(v) && (f.Summed || v != "") {
		if !f.Summed {
			return "", nil, f.errorf("%q is not <key>=<value>", clip(string(v)))
		}
		all, err = f.check("", string(v))
		return all, nil, err
	}
	each = Parts{}
	if v == "" {
		return "", each, nil
	}
	for _, part := range strings.Split(string(v), ";") {
		if err := f.parsePart(part, each); err != nil {
			return "", nil, err
		}
	}
	return "", each, nil
}

// parsePart adds the parts one "<keys>=<value>" group names to each.
func (f Form) parsePart(part string, each Parts) error {
	keys, val, ok := strings.Cut(part, "=")
	if !ok || keys == "" {
		return f.errorf("%q is not <key>=<value>", clip(part))
	}
	names := []string{keys}
	if f.Numbered {
		set, err := cpuset.Parse(keys)
		if err != nil || set.IsEmpty() {
			return f.errorf("%q does not start with a list of numbers", clip(part))
		}
		names = names[:0]
		for _, n := range set.List() {
			names = append(names, strconv.Itoa(n))
		}
	}
	for _, k := range names {
		if _, dup := each[k]; dup {
			return f.errorf("%s named twice", clip(k))
		}
		v, err := f.check(k, val)
		if err != nil {
			return err
		}
		each[k] = v
	}
	return nil
}

func (f Form) check(key, value string) (string, error) {
	if f.Check == nil {
		return value, nil
	}
	v, err := f.Check(key, value)
	if err != nil {
		return "", f.wrap(err)
	}
	return v, nil
}

func (f Form) errorf(format string, a ...any) error {
	return f.wrap(fmt.Errorf(format, a...))
}

func (f Form) wrap(err error) error {
	if f.What == "" {
		return err
	}
	return fmt.Errorf("%s: %w", f.What, err)
}

// Sum is v as plans compare it: Format of the parts v names (so a value
// naming every part the same reads as that one value where the Form is
// Summed); a uniform v as it is.
func (f Form) Sum(v Value) (Value, error) {
	all, each, err := f.Parse(v)
	if err != nil {
		return "", err
	}
	if each == nil {
		return Value(all), nil
	}
	return f.Format(each), nil
}

// clip bounds a value quoted in an error.
func clip(s string) string { return textfmt.Clip(s, 80) }
