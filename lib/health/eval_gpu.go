package health

import (
	"errors"
	"fmt"
	"strings"

	"gpuprep/lib/gpu"
)

// The checks of one GPU (gpuChecks), each over one GPU's facts.

func evalPersistence(g GPUFacts, _ Expect) Result {
	const c = "persistence"
	s := gpuScope(g.Dev)
	if g.SettingsErr != nil {
		return unreadable(c, s, g.SettingsErr)
	}
	if has(g.Settings.Unsupported, "persistence") {
		return skip(c, s, "persistence mode not supported")
	}
	if !g.Settings.Persistence {
		return fail(c, s, "persistence mode is off")
	}
	return ok(c, s, "on")
}

func evalECCMode(g GPUFacts, _ Expect) Result {
	const c = "ecc_mode"
	s := gpuScope(g.Dev)
	if g.SettingsErr != nil {
		return unreadable(c, s, g.SettingsErr)
	}
	switch {
	case has(g.Settings.Unsupported, "ecc_enabled"):
		return skip(c, s, "ECC not supported")
	case !g.Settings.ECCEnabled:
		return fail(c, s, "ECC is disabled")
	case !g.Settings.ECCPending:
		return fail(c, s, "ECC is to be disabled at the next GPU reset")
	}
	return ok(c, s, "on")
}

func evalECCVolatile(g GPUFacts, _ Expect) Result {
	const c = "ecc_volatile"
	s := gpuScope(g.Dev)
	if g.HealthErr != nil {
		return unreadable(c, s, g.HealthErr)
	}
	if has(g.Health.Unsupported, "ecc_volatile_uncorrected") {
		return skip(c, s, "ECC counters not supported")
	}
	if n := g.Health.ECCVolatileUncorrected; n > 0 {
		return fail(c, s, fmt.Sprintf("%d volatile uncorrectable ECC %s", n, map[bool]string{true: "error", false: "errors"}[n == 1]))
	}
	return ok(c, s, "0")
}

func evalRowRemap(g GPUFacts, _ Expect) Result {
	const c = "row_remap"
	s := gpuScope(g.Dev)
	if g.HealthErr != nil {
		return unreadable(c, s, g.HealthErr)
	}
	h := g.Health
	var probs []string
	if h.RemappingFailed {
		probs = append(probs, "row remapping failed (replace the GPU)")
	}
	if h.RemappedRowsPending {
		probs = append(probs, "row remapping pending (reset the GPU)")
	}
	if h.RetiredPagesPending {
		probs = append(probs, "retired pages pending (reset the GPU)")
	}
	if len(probs) > 0 {
		return fail(c, s, strings.Join(probs, ", "))
	}
	if has(h.Unsupported, "remapping_failed") && has(h.Unsupported, "retired_pages_pending") {
		return skip(c, s, "neither row remapping nor page retirement supported")
	}
	return ok(c, s, "none pending")
}

func evalNVLinks(g GPUFacts, e Expect) Result {
	const c = "nvlinks"
	s := gpuScope(g.Dev)
	want, from := e.Health.NVLinks, "health.nvlinks"
	if want == 0 {
		if m, ok := e.Models.For(g.Dev.Name); ok && m.NVLinks > 0 {
			want, from = m.NVLinks, "model file"
		}
	}
	if want == 0 {
		return skip(c, s, "no expected count (health.nvlinks, model file)")
	}
	if g.LinksErr != nil {
		if errors.Is(g.LinksErr, gpu.ErrUnsupported) && !strings.Contains(g.LinksErr.Error(), "backend cannot") {
			return fail(c, s, fmt.Sprintf("NVML reports no NVLink, want %d active (%s)", want, from))
		}
		return unreadable(c, s, g.LinksErr)
	}
	if want < 0 {
		want, from = g.LinksTotal, "all the GPU has"
	}
	if g.LinksActive < want {
		return fail(c, s, fmt.Sprintf("%d of %d NVLinks active, want %d (%s)", g.LinksActive, g.LinksTotal, want, from))
	}
	return ok(c, s, fmt.Sprintf("%d active", g.LinksActive))
}

// evalPCIe compares the GPU's link width with the model file's or the
// link's maximum, and its speed likewise, except on an idle GPU: NVIDIA
// GPUs lower their link speed when idle, so an idle GPU's speed says
// nothing (its width does).
func evalPCIe(g GPUFacts, e Expect) Result {
	const c = "pcie_link"
	s := gpuScope(g.Dev)
	if g.PCIeErr != nil {
		return unreadable(c, s, g.PCIeErr)
	}
	l := g.PCIe
	wantW, wantS, wantGTs := l.MaxWidth, l.MaxSpeed, l.MaxGTs
	if m, ok := e.Models.For(g.Dev.Name); ok {
		if m.PCIeWidth > 0 {
			wantW = m.PCIeWidth
		}
		if m.PCIeSpeed != "" {
			wantS = m.PCIeSpeed
			wantGTs, _ = ParseLinkSpeed(m.PCIeSpeed)
		}
	}
	var probs []string
	if l.Width < wantW {
		probs = append(probs, fmt.Sprintf("link width x%d, want x%d", l.Width, wantW))
	}
	idle := g.ThrottleErr == nil && g.Throttle&gpu.ThrottleGPUIdle != 0
	if !idle && l.GTs > 0 && l.GTs < wantGTs {
		probs = append(probs, fmt.Sprintf("link speed %s, want %s", l.Speed, wantS))
	}
	if len(probs) > 0 {
		return fail(c, s, "PCIe "+strings.Join(probs, ", "))
	}
	v := fmt.Sprintf("x%d %s", l.Width, l.Speed)
	if idle {
		v += " (idle: speed not compared)"
	}
	return ok(c, s, v)
}

func evalThrottle(g GPUFacts, _ Expect) Result {
	const c = "throttle"
	s := gpuScope(g.Dev)
	if g.ThrottleErr != nil {
		return unreadable(c, s, g.ThrottleErr)
	}
	if bad := g.Throttle & gpu.ThrottleBad; bad != 0 {
		return fail(c, s, "clocks throttled: "+strings.Join(gpu.ThrottleNames(bad), ", "))
	}
	return ok(c, s, strings.Join(append([]string{"none bad"}, gpu.ThrottleNames(g.Throttle)...), ", "))
}
