package config

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
)

// ErrUnknownProfile is wrapped by Profile's error for a name the
// configuration does not define.
var ErrUnknownProfile = errors.New("unknown profile")

// Profile is a profile with inheritance applied: what a job that selects it
// gets.
type Profile struct {
	Name  string   // the selected name
	Chain []string // Name, its parent, the parent's parent, ...
	Knobs          // every knob set anywhere on the chain, the nearest profile winning
	// Required are the knobs whose failure fails the prolog (drains the
	// node): the nearest list on the chain.
	Required []string
	// Invariants are merged knob by knob along the chain, like Knobs.
	Invariants Knobs
}

// IsRequired reports whether the knob with the given key name is required.
func (p Profile) IsRequired(knob string) bool { return slices.Contains(p.Required, knob) }

// Profile returns the named profile with inheritance applied: a child's
// knobs override its parent's key by key, a child's required list replaces
// its parent's. cstate_max_latency_us = -1 comes out as nil (leave alone).
func (c *Config) Profile(name string) (Profile, error) {
	chain, err := c.chain(name)
	if err != nil {
		return Profile{}, err
	}
	p := Profile{Name: name, Chain: chain}
	for i := len(chain) - 1; i >= 0; i-- { // root ancestor first
		spec := c.Profiles[chain[i]]
		p.Knobs = p.Knobs.Overlay(spec.Knobs)
		p.Invariants = p.Invariants.Overlay(spec.Invariants)
		if spec.Required != nil {
			p.Required = slices.Clone(spec.Required)
		}
	}
	p.Knobs = p.Knobs.normalized()
	p.Invariants = p.Invariants.normalized()
	return p, nil
}

// ProfileNames lists the defined profiles, sorted.
func (c *Config) ProfileNames() []string {
	names := make([]string, 0, len(c.Profiles))
	for n := range c.Profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// cycleError is chain's error for an inheritance cycle.
type cycleError struct{ cycle []string }

func (e *cycleError) Error() string {
	return "inheritance cycle " + strings.Join(e.cycle, " -> ")
}

// parentError is chain's error for a missing parent.
type parentError struct{ child, parent string }

func (e *parentError) Error() string {
	return fmt.Sprintf("profile %q inherits %q, which is not defined", e.child, e.parent)
}

// chain returns name followed by its ancestors.
func (c *Config) chain(name string) ([]string, error) {
	if _, ok := c.Profiles[name]; !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownProfile, name)
	}
	chain := []string{name}
	for {
		cur := chain[len(chain)-1]
		parent := c.Profiles[cur].Inherits
		if parent == "" {
			return chain, nil
		}
		if _, ok := c.Profiles[parent]; !ok {
			return nil, &parentError{cur, parent}
		}
		if i := slices.Index(chain, parent); i >= 0 {
			return nil, &cycleError{append(slices.Clone(chain[i:]), parent)}
		}
		chain = append(chain, parent)
	}
}

// KnobNames lists every knob's key name ("cpu_governor", ...) in schema
// order.
func KnobNames() []string { return knobNames() }

var knobNames = sync.OnceValue(func() []string {
	var names []string
	for _, f := range fieldsOf(reflect.TypeFor[Knobs]()) {
		names = append(names, f.name)
	}
	return names
})

// IsKnob reports whether name is a knob's key name.
func IsKnob(name string) bool { return slices.Contains(knobNames(), name) }

// Names lists the key names of the knobs k sets, in schema order.
func (k Knobs) Names() []string {
	var names []string
	v := reflect.ValueOf(k)
	for i, n := range knobNames() {
		if !v.Field(i).IsNil() {
			names = append(names, n)
		}
	}
	return names
}

// IsSet reports whether k sets the knob with the given key name.
func (k Knobs) IsSet(name string) bool { return slices.Contains(k.Names(), name) }

// Overlay returns k with every knob that top sets replaced by top's value.
// The result shares no memory with either.
func (k Knobs) Overlay(top Knobs) Knobs {
	out := reflect.New(reflect.TypeFor[Knobs]()).Elem()
	b, t := reflect.ValueOf(k), reflect.ValueOf(top)
	for i := range out.NumField() {
		src := b.Field(i)
		if !t.Field(i).IsNil() {
			src = t.Field(i)
		}
		if !src.IsNil() {
			cp := reflect.New(src.Type().Elem())
			cp.Elem().Set(src.Elem()) // knob values hold no references
			out.Field(i).Set(cp)
		}
	}
	return out.Interface().(Knobs)
}

// normalized turns the "leave alone" spellings into nil.
func (k Knobs) normalized() Knobs {
	if k.CStateMaxLatencyUS != nil && *k.CStateMaxLatencyUS == -1 {
		k.CStateMaxLatencyUS = nil
	}
	return k
}
