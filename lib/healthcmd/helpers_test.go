package healthcmd

import (
	"gpuprep/internal/hooktest"
	"gpuprep/lib/hookcmd"
)

// mainRun runs the prolog or epilog command with a Slurm-like environment:
// the jobs between gpuprep-health's runs.
func mainRun(op string, env map[string]string, args ...string) (int, string, string) {
	cmd := hookcmd.Prolog
	if op == "epilog" {
		cmd = hookcmd.Epilog
	}
	return hooktest.Run(cmd, env, args...)
}
