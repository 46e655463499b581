package hookcmd

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"gpuprep/lib/config"
	"gpuprep/lib/slurm"
)

// drainTimeout is how long scontrol may take to set the drain reason.
const drainTimeout = 5 * time.Second

// maybeDrain sets the node's drain reason with scontrol when the config's
// general.drain_reason is on (off by default: Slurm already drains a node
// whose prolog fails, with "Prolog error"; this replaces the reason with
// gpuprep's). It never blocks the hook: scontrol gets drainTimeout, its
// failure is only logged, and the reason is passed as one argument, never
// through a shell (slurm.Drain).
func maybeDrain(cfg *config.Config, node, reason string, log *slog.Logger) {
	if !cfg.General.DrainReason || node == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	err := slurm.Drain(ctx, node, reason)
	var se *slurm.ScontrolError
	switch {
	case errors.Is(err, slurm.ErrNoScontrol):
		log.Warn("drain_reason: scontrol not found")
	case errors.As(err, &se):
		log.Warn("drain_reason: scontrol failed", "err", se.Err, "output", se.Output)
	case err != nil:
		log.Warn("drain_reason: scontrol failed", "err", err)
	}
}
