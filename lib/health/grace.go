package health

import (
	"fmt"
	"slices"
	"time"

	"gpuprep/lib/config"
)

// GraceChecks fail on a healthy node that has just booted, until the
// daemons they depend on are up: nvidia-persistenced (persistence, and the
// driver that lists the GPUs), the fabric manager (NVLinks), the subnet
// manager (InfiniBand ports), the service that writes the NCCL topology
// file, and DCGM's host engine (the external check, a dcgmi diag).
var GraceChecks = []string{"gpu_count", "driver_version", "persistence", "nvlinks", "ib_ports", "nccl_topo", "external"}

// ApplyBootGrace lowers each fatal failure of a GraceChecks check to a
// warning, saying so, while the node is in its boot grace (left > 0: the
// time left of [health] boot_grace since boot). Xids, ECC errors and the
// rest keep their severity: a GPU that falls off the bus during boot is
// not a daemon that is late. It does no I/O.
func ApplyBootGrace(rep *Report, left time.Duration) {
	if left <= 0 {
		return
	}
	for i := range rep.Results {
		r := &rep.Results[i]
		if r.Status == Fail && r.Severity == config.HealthFatal && slices.Contains(GraceChecks, r.Check) {
			r.Severity = config.HealthWarn
			r.Reason += fmt.Sprintf(" (boot grace: %s left before it drains)", left.Round(time.Second))
		}
	}
}
