package hookcmd

import (
	"context"
	"io"

	"gpuprep/lib/cli"
	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
	"gpuprep/lib/health"
	"gpuprep/lib/state"
)

// healthCheck is `gpuprep-prolog --health [--json]`: the prolog's health
// checks on every GPU, read-only (the spool's XID watermark and debounce
// counts are read, never moved; no lock, log file or metrics), printed as a
// table or JSON. Exit 0 when no check is fatal, 1 when one is, 2 on bad
// input. With --gpu-backend procfs the checks that need NVML are skipped
// and say so.
func healthCheck(prog string, f *flags, cfg *config.Config, stdout, stderr io.Writer) int {
	models, err := health.LoadModels(cfg.Health.ModelFile)
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitBadInput, err)
	}
	backend, err := f.common.OpenGPU(cfg)
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitBadInput, err)
	}
	gpu.Light(backend)
	dir := f.stateDir
	if dir == "" {
		dir = cfg.General.StateDir
	}
	sp, err := state.OpenReadOnly(dir)
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitMismatch, err) // it names the state dir
	}
	defer sp.Close()
	deadline := cli.Deadline(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	rep, err := health.Run(ctx, health.Options{Op: "health", Root: f.common.HostRoot(), GPU: backend, Health: cfg.Health,
		Models: models, Spool: sp, ReadOnly: true})
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitMismatch, err)
	}
	if f.common.JSON {
		cli.WriteJSON(stdout, rep)
	} else {
		rep.WriteTable(stdout)
	}
	if len(rep.Fatal()) > 0 {
		return cli.ExitMismatch
	}
	return cli.ExitOK
}
