package config

import (
	"fmt"

	"gpuprep/lib/knob"
)

// mpsKnob is the knob a job that asks for gres/mps gets.
const mpsKnob = "mps"

// JobProfile is the selected profile as the job gets it: without its
// required list where the selection drops it (selection.unfit_profile =
// "drop"), and with mps = true where the job asked for gres/mps (sel.MPS)
// and the profile leaves mps unset: Slurm schedules the share and leaves
// the daemon to the prolog. implied says, one line each, what the job's
// request added to the profile.
func (c *Config) JobProfile(sel Selection) (prof Profile, implied []string, err error) {
	prof, err = c.Profile(sel.Profile)
	if err != nil {
		return prof, nil, fmt.Errorf("profile %q: %w", sel.Profile, err)
	}
	if sel.DropRequired {
		prof.Required = nil
	}
	if sel.MPS && !prof.Knobs.IsSet(mpsKnob) {
		d, _ := knob.Lookup(mpsKnob)
		on, err := d.Decode(true)
		if err != nil {
			return prof, nil, fmt.Errorf("profile %q: mps: %w", sel.Profile, err)
		}
		prof.Knobs = prof.Knobs.With(mpsKnob, on)
		implied = append(implied, "the job asked for gres/mps: mps = true for it")
	}
	return prof, implied, nil
}
