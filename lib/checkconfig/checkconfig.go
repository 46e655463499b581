// Package checkconfig is --check-config of gpuprep-prolog, gpuprep-epilog
// and gpuprep-health: the configuration validated and checked against this
// node, read-only, as a prolog here would judge it (checkconfig.go: the
// profiles against the GPUs and the required knobs; checknode.go: the MIG
// layouts and the health checks; checkiso.go: how isolation would confine
// the node's services).
package checkconfig

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"gpuprep/lib/cli"
	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
	"gpuprep/lib/health"
	"gpuprep/lib/hook"
	"gpuprep/lib/plural"
	"gpuprep/lib/slurm"
)

// Run is --check-config: the configuration is valid (every profile
// resolves); each profile that sets GPU values is checked against the GPU
// models of this node (NVML's power range and highest clocks), and each
// profile's required knobs against what this node can apply; and the
// prolog's other checks that can fail it run against this node, read-only
// (checknode.go): the [mig] layout of each GPU and the health checks; and
// how the hooks would confine the node's services, read-only
// (checkiso.go: through systemd or cgroupfs, and why; the units kept as
// the admin set them), which never changes the exit code. Exit
// 0 when valid, 2 when not, 1 when a prolog on this node would fail and
// drain it: the default profile does not fit its GPUs or requires a knob
// it cannot apply, a GPU's MIG layout is not the one [mig] wants, or a
// fatal health check fails. getenv gives SLURMD_NODENAME ([mig.nodes];
// else slurm.NodeName's other sources). gpuprep-health's --check-config is the same check:
// the file and node are the hooks'.
func Run(prog string, c *cli.Common, cfg *config.Config, getenv func(string) string, stdout, stderr io.Writer) int {
	for _, name := range cfg.ProfileNames() {
		if _, err := cfg.Profile(name); err != nil {
			return cli.Fail(stderr, prog, cli.ExitBadInput, err)
		}
	}
	models, err := health.LoadModels(cfg.Health.ModelFile)
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitBadInput, err)
	}
	fmt.Fprintf(stdout, "%s: %s is valid (%s)\n", prog, cfg.File, plural.Count(len(cfg.Profiles), "profile", "profiles"))
	if cfg.Health.ModelFile != "" {
		fmt.Fprintf(stdout, "health model file %s is valid (%s)\n", cfg.Health.ModelFile, plural.Count(len(models), "GPU model", "GPU models"))
	}
	node := slurm.NodeName(c.HostRoot(), "", getenv)
	checkIsolation(c.HostRoot(), cfg, getenv, node, stdout)
	b, err := c.OpenGPU(cfg)
	if err != nil {
		fmt.Fprintf(stdout, "GPU values not checked: %v\n", err)
		return cli.ExitOK
	}
	code, reported := cli.ExitOK, map[string]bool{}
	if b.Name() != "none" {
		code = checkFits(prog, cfg, b, reported, stdout, stderr)
	}
	code = max(code, checkRequired(c, cfg, b, reported, stdout))
	code = max(code, checkNodeMIG(cfg, b, node, stdout))
	code = max(code, checkNodeHealth(c, cfg, b, models, stdout))
	return code
}

// checkFits prints whether each profile's GPU values fit this node's GPU
// models: exit 1 when the default profile requires values they refuse.
// Each required value a GPU refuses goes in reported, as
// reportedKey(profile, knob).
func checkFits(prog string, cfg *config.Config, b gpu.Backend, reported map[string]bool, stdout, stderr io.Writer) int {
	fits, err := hook.ProfileFits(cfg, b)
	if errors.Is(err, hook.ErrNoGPULimits) {
		fmt.Fprintf(stdout, "GPU values not checked: %v (use the nvml backend)\n", err)
		return cli.ExitOK
	}
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitMismatch, err)
	}
	code := cli.ExitOK
	for _, f := range fits {
		gpus := plural.Count(f.GPUs, "GPU", "GPUs")
		if len(f.Problems) == 0 {
			fmt.Fprintf(stdout, "profile %q fits %s (%s here)\n", f.Profile, f.Model, gpus)
			continue
		}
		var reasons []string
		for _, p := range f.Problems {
			reasons = append(reasons, p.Reason)
			if p.Required {
				reported[reportedKey(f.Profile, p.Knob)] = true
			}
		}
		then := "the prolog skips those values with a warning (no knob of them is required)"
		switch {
		case f.Fatal() && f.Profile == cfg.Selection.DefaultProfile:
			then = "it is the default profile and requires them: the prolog fails and Slurm drains this node"
			code = cli.ExitMismatch
		case f.Fatal():
			then = "it requires them: a job that chooses it gets " + unfitOutcome(cfg)
		}
		fmt.Fprintf(stdout, "profile %q does not fit %s (%s here): %s; %s\n", f.Profile, f.Model, gpus, strings.Join(reasons, "; "), then)
	}
	return code
}

// checkRequired plans each profile that requires knobs for a job on every
// GPU of this node, read-only (hook.RequiredUnmet), and prints each
// required knob the prolog could not apply here (unsupported, a read-only
// GPU backend), except those checkFits printed already (reported): exit 1
// when the default profile has one, for its prolog fails and drains the
// node.
func checkRequired(c *cli.Common, cfg *config.Config, b gpu.Backend, reported map[string]bool, w io.Writer) int {
	code := cli.ExitOK
	for _, name := range cfg.ProfileNames() {
		skips, err := hook.RequiredUnmet(cfg, b, c.HostRoot(), name)
		if err != nil {
			fmt.Fprintf(w, "profile %q: required knobs not checked: %v\n", name, err)
			continue
		}
		var knobs, reasons []string
		for _, s := range skips {
			if reported[reportedKey(name, s.ID.Name)] || slices.Contains(knobs, s.ID.Name) {
				continue
			}
			knobs = append(knobs, s.ID.Name)
			reasons = append(reasons, s.Reason)
		}
		if len(knobs) == 0 {
			continue
		}
		then := "a job that chooses it gets " + unfitOutcome(cfg)
		if name == cfg.Selection.DefaultProfile {
			then = "it is the default profile: the prolog fails and Slurm drains this node"
			code = cli.ExitMismatch
		}
		fmt.Fprintf(w, "profile %q requires %s, which this node cannot apply (%s); %s\n", name, strings.Join(knobs, ", "), strings.Join(reasons, "; "), then)
	}
	return code
}

// reportedKey names a profile's knob in checkConfig's reported set.
func reportedKey(profile, knob string) string { return profile + "\x00" + knob }

// unfitOutcome says what [selection] unfit_profile does with a user's
// profile that cannot be applied.
func unfitOutcome(cfg *config.Config) string {
	switch cfg.Selection.UnfitProfile {
	case config.UnfitDrop:
		return "it with the values skipped (unfit_profile = \"drop\")"
	case config.UnfitFail:
		return "a failed prolog and a drained node (unfit_profile = \"fail\")"
	}
	return fmt.Sprintf("the default profile %q (unfit_profile = \"default\")", cfg.Selection.DefaultProfile)
}
