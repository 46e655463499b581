package hookcmd

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"gpuprep/lib/cli"
	"gpuprep/lib/config"
	"gpuprep/lib/health"
	"gpuprep/lib/hook"
	"gpuprep/lib/plural"
)

// checkConfig is --check-config: the configuration is valid (every profile
// resolves), and each profile that sets GPU values is checked against the
// GPU models of this node (NVML's power range and highest clocks). Exit 0
// when valid, 2 when not, 1 when the default profile does not fit this
// node's GPUs (its prolog would fail and drain the node).
func checkConfig(prog string, c *cli.Common, cfg *config.Config, stdout, stderr io.Writer) int {
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
	b, err := c.OpenGPU(cfg)
	if err != nil {
		fmt.Fprintf(stdout, "GPU values not checked: %v\n", err)
		return cli.ExitOK
	}
	if b.Name() == "none" {
		return cli.ExitOK
	}
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
