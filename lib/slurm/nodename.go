package slurm

import (
	"os"
	"strings"

	"gpuprep/lib/host"
)

// NodeName is this node's Slurm name, the name scontrol and sinfo take:
// flag (a --node option) when set, else SLURMD_NODENAME (slurmd sets it
// for the prolog, the epilog and HealthCheckProgram), else the NodeName=
// line of the slurm.conf slurmd reads (LocateConf with SLURM_CONF) whose
// host is this host (Conf.NodeNameFor), else the host name up to its
// first dot, as slurmd itself would take it.
func NodeName(r host.Root, flag string, getenv func(string) string) string {
	if flag != "" {
		return flag
	}
	if n := getenv("SLURMD_NODENAME"); n != "" {
		return n
	}
	h, _ := os.Hostname()
	if file, err := LocateConf(r, getenv("SLURM_CONF")); err == nil {
		if c, err := ReadConf(r, file); err == nil {
			if n := c.NodeNameFor(h); n != "" {
				return n
			}
		}
	}
	short, _, _ := strings.Cut(h, ".")
	return short
}
