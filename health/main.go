// Command gpuprep-health is the Slurm HealthCheckProgram (slurm.conf:
// HealthCheckProgram=/usr/sbin/gpuprep-health): it runs the prolog's health
// checks on an idle or busy node, drains the node when one fails fatally
// and resumes a node gpuprep drained once every check passes. Exit 0:
// healthy; 1: a fatal check failed; 2: bad input. The command is
// lib/healthcmd, its checks lib/health.
package main

import (
	"os"

	"gpuprep/lib/cli"
	"gpuprep/lib/healthcmd"
)

func main() { os.Exit(healthcmd.Main(cli.OS())) }
