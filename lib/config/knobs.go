package config

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"

	"gpuprep/lib/knob"
)

// Knobs are the knob settings of one table: [defaults], a profile, or its
// invariants. The knobs, their keys and the values each accepts are
// lib/knob's registry (knob.Defs): a key's TOML value is checked and turned
// into the canonical setting the knob's Desired takes by the knob's Decode.
// A knob the table leaves out is "leave alone". The zero value sets none.
type Knobs struct {
	set map[string]string // knob name -> canonical setting
	// bad holds the keys a decoded table got wrong; validate reports them.
	bad []knobProblem
}

// knobProblem is a bad key of a knob table: sub is the key below the
// table ("cpu_governor", or "gpu_app_clocks_mhz", "gfx").
type knobProblem struct {
	sub []string
	msg string
}

// UnmarshalTOML decodes a table of knob keys, laid over what k already
// sets (so [defaults] merges with the built-in one). Bad keys do not fail
// the decode: validate reports them with the others, by line.
func (k *Knobs) UnmarshalTOML(v any) error {
	tbl, ok := v.(map[string]any)
	if !ok {
		return errors.New("must be a table")
	}
	k.decode(tbl, nil)
	return nil
}

// decode lays the knob keys of tbl over k, skipping those skip says are
// not knobs' (a profile's inherits, required and invariants).
func (k *Knobs) decode(tbl map[string]any, skip func(string) bool) {
	k.set = maps.Clone(k.set)
	for _, name := range slices.Sorted(maps.Keys(tbl)) {
		if skip != nil && skip(name) {
			continue
		}
		s, p := decodeKnob(name, tbl[name])
		if p != nil {
			k.bad = append(k.bad, *p)
			continue
		}
		if k.set == nil {
			k.set = map[string]string{}
		}
		k.set[name] = s
	}
}

// decodeKnob decodes the value of knob key name; the problem names the key
// below the knob table.
func decodeKnob(name string, raw any) (string, *knobProblem) {
	d, ok := knob.Lookup(name)
	if !ok {
		return "", &knobProblem{sub: []string{name}}
	}
	s, err := d.Decode(raw)
	if err == nil {
		return s, nil
	}
	p := &knobProblem{sub: []string{name}}
	shown := formatValue(raw)
	var ve *knob.ValueError
	if errors.As(err, &ve) {
		if ve.Key != "" {
			p.sub = append(p.sub, ve.Key)
			if ve.Unknown {
				return "", p // an unknown key, reported as such
			}
			if t, ok := raw.(map[string]any); ok {
				shown = formatValue(t[ve.Key])
			}
		}
		if ve.Shown != "" {
			shown = ve.Shown
		}
	}
	p.msg = fmt.Sprintf("= %s: %s", shown, err)
	return "", p
}

// report adds the problem of a knob table of type t (Knobs or
// ProfileSpec) at path to ps; an unknown key comes with a suggestion.
func (p knobProblem) report(t reflect.Type, path []string, ps *problems) {
	key := append(append([]string(nil), path...), p.sub...)
	switch {
	case p.msg == "" && len(p.sub) == 1:
		ps.add(key, "unknown key %s%s", quoteKey(key), suggestKey(t, path, p.sub[0]))
	case p.msg == "":
		ps.add(key, "unknown key %s", quoteKey(key))
	default:
		ps.add(key, "%s %s", formatKey(key), p.msg)
	}
}

// KnobNames lists every knob's key name ("cpu_governor", ...) in the
// registry's order.
func KnobNames() []string { return knob.Names() }

// IsKnob reports whether name is a knob's key name.
func IsKnob(name string) bool {
	_, ok := knob.Lookup(name)
	return ok
}

// Setting returns the setting k gives the knob with the given key name, in
// the canonical string form the knob's Desired takes (see knob.Def.Decode:
// gpu_locked_clocks_mhz [min, max] is "min,max" and [] "unlocked", ...);
// ok is false when k leaves the knob alone or no knob has that name.
func (k Knobs) Setting(name string) (string, bool) {
	s, ok := k.set[name]
	return s, ok
}

// Names lists the key names of the knobs k sets, in the registry's order.
func (k Knobs) Names() []string {
	var names []string
	for _, n := range knob.Names() {
		if _, ok := k.set[n]; ok {
			names = append(names, n)
		}
	}
	return names
}

// IsSet reports whether k sets the knob with the given key name.
func (k Knobs) IsSet(name string) bool {
	_, ok := k.set[name]
	return ok
}

// With returns k with the knob name set to setting (canonical form). The
// result shares no memory with k.
func (k Knobs) With(name, setting string) Knobs {
	out := Knobs{set: maps.Clone(k.set)}
	if out.set == nil {
		out.set = map[string]string{}
	}
	out.set[name] = setting
	return out
}

// Overlay returns k with every knob that top sets replaced by top's
// setting. The result shares no memory with either.
func (k Knobs) Overlay(top Knobs) Knobs {
	out := Knobs{set: maps.Clone(k.set)}
	for n, s := range top.set {
		if out.set == nil {
			out.set = map[string]string{}
		}
		out.set[n] = s
	}
	return out
}

// normalized leaves out the knobs set to their "leave alone" setting
// (cstate_max_latency_us = -1).
func (k Knobs) normalized() Knobs {
	out := Knobs{set: maps.Clone(k.set)}
	for n, s := range k.set {
		if d, ok := knob.Lookup(n); ok && d.LeaveAlone != "" && s == d.LeaveAlone {
			delete(out.set, n)
		}
	}
	return out
}

// ProfileSpec is one [profiles.<name>] table as written in the file: its
// own keys, and knob keys beside them.
type ProfileSpec struct {
	Inherits string `toml:"inherits"` // parent profile; "" for none
	// Required lists knob names whose failure (unsupported or not applied)
	// must fail the prolog and so drain the node. nil = inherit the parent's
	// list; [] = none.
	Required []string `toml:"required"`
	// Invariants are values the epilog checks are still in force after the
	// job, whoever set them; a mismatch is recorded as drift.
	Invariants Knobs `toml:"invariants"`
	// Knobs are the knob keys of the table.
	Knobs `toml:"-"`
}

// UnmarshalTOML decodes a profile table. A wrong type of inherits, required
// or invariants fails the decode (the strict check then names the key);
// bad knob keys are left to validate, as for Knobs.
func (s *ProfileSpec) UnmarshalTOML(v any) error {
	tbl, ok := v.(map[string]any)
	if !ok {
		return errors.New("must be a table")
	}
	bad := errors.New("wrong type")
	if raw, ok := tbl["inherits"]; ok {
		if s.Inherits, ok = raw.(string); !ok {
			return bad
		}
	}
	if raw, ok := tbl["required"]; ok {
		list, ok := raw.([]any)
		if !ok {
			return bad
		}
		s.Required = make([]string, 0, len(list))
		for _, e := range list {
			n, ok := e.(string)
			if !ok {
				return bad
			}
			s.Required = append(s.Required, n)
		}
	}
	if raw, ok := tbl["invariants"]; ok {
		if err := s.Invariants.UnmarshalTOML(raw); err != nil {
			return err
		}
	}
	s.Knobs.decode(tbl, func(k string) bool { return fieldType(profileSpecType, k) != nil })
	return nil
}
