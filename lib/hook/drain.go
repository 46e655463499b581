package hook

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"time"

	"gpuprep/lib/config"
)

// maybeDrain sets the node's drain reason with scontrol when the config's
// general.drain_reason is on (off by default: Slurm already drains a node
// whose prolog fails, with "Prolog error"; this replaces the reason with
// gpuprep's). It never blocks the hook: scontrol gets 5 seconds, its failure
// is only logged, and the reason is passed as one argument, never through a
// shell.
func maybeDrain(cfg *config.Config, node, reason string, log *slog.Logger) {
	if !cfg.General.DrainReason || node == "" {
		return
	}
	scontrol := ""
	for _, p := range []string{"/usr/bin/scontrol", "/usr/local/bin/scontrol", "/opt/slurm/bin/scontrol"} {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			scontrol = p
			break
		}
	}
	if scontrol == "" {
		log.Warn("drain_reason: scontrol not found")
		return
	}
	if len(reason) > 200 {
		reason = reason[:200]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, scontrol, "update", "nodename="+node, "state=drain", "reason="+reason)
	if out, err := cmd.CombinedOutput(); err != nil {
		log.Warn("drain_reason: scontrol failed", "err", err, "output", string(out))
	}
}
