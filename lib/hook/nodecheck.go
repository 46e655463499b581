package hook

import (
	"fmt"
	"log/slog"

	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
	"gpuprep/lib/plan"
)

// The prolog's own judgements of a whole node, read-only, for
// `--check-config`: an admin learns which GPUs a prolog would refuse, and
// why, before a job does.

// CheckNodeMIG is the prolog's [mig] layout check (checkMIG) of every GPU
// of the node, for a job on node in partition ("" none) that requests no
// layout. warnings say what was not checked or verified; err is the
// migError a prolog would fail with (its reason names every mismatched
// GPU), nil when every GPU matches.
func CheckNodeMIG(cfg *config.Config, b gpu.Backend, node, partition string) (checks []MIGCheck, warnings []string, err error) {
	if !cfg.MIG.Configured() {
		return nil, nil, nil
	}
	devs, err := b.Devices()
	if err != nil {
		return nil, nil, fmt.Errorf("gpu backend %s: %w", b.Name(), err)
	}
	o := newRun(&Options{Config: cfg, GPU: b, Node: node})
	return checkMIG(o, devs, config.MIGWhere{Node: node, Partition: partition})
}

// RequiredUnmet plans profile for a job on every GPU of the node, as the
// prolog does on a node no job holds, and returns the required knobs the
// plan would skip (unsupported here, or a value the GPU refuses): any one
// of them fails the prolog. It reads knobs and writes nothing.
func RequiredUnmet(cfg *config.Config, b gpu.Backend, root host.Root, profile string) ([]plan.Skip, error) {
	prof, err := cfg.Profile(profile)
	if err != nil {
		return nil, fmt.Errorf("profile %q: %w", profile, err)
	}
	if len(prof.Required) == 0 {
		return nil, nil
	}
	o := newRun(&Options{Root: root, Config: cfg, GPU: b, Log: slog.New(slog.DiscardHandler)})
	o.settings = prof.Knobs.Setting
	devs := o.devices()
	p := plan.ForJob("check-config", observe(catalog(o, devs), prof, jobScopes(devs), nil), plan.NodeState{})
	var out []plan.Skip
	for _, s := range p.Skipped {
		if s.Required {
			out = append(out, s)
		}
	}
	return out, nil
}
