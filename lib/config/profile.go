package config

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
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
