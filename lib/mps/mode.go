package mps

import (
	"fmt"
	"strings"
)

// Refuse says whether a GPU in compute mode mode (NVML's, as lib/gpu names
// it) can serve MPS clients: "default" can, and "exclusive_process" is
// the mode NVIDIA recommends for MPS (the one context allowed is the MPS
// server's, so no process bypasses it). "prohibited" cannot: the GPU
// forbids every CUDA context, the MPS server's too. Anything else
// (exclusive_thread, which CUDA no longer supports, or a value NVML
// added since) is refused, naming it. "" (a backend that cannot read the
// mode) is not refused: MPS itself fails then, in control.log.
func Refuse(mode string) error {
	switch strings.ToLower(strings.TrimSpace(mode)) {
	case "", "default", "exclusive_process":
		return nil
	case "prohibited":
		return fmt.Errorf("mps: the GPU's compute mode is prohibited, which forbids any CUDA context (the MPS server's too); set it to exclusive_process or default")
	}
	return fmt.Errorf("mps: the GPU's compute mode is %q; MPS needs exclusive_process (recommended) or default", mode)
}
