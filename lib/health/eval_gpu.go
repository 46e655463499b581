package health

import (
	"errors"
	"fmt"
	"strings"

	"gpuprep/lib/gpu"
)

// The checks of one GPU (gpuChecks), each over one GPU's facts. A check
// names the fact it needs (read: its read error, nil for none) and judges
// it (judge); gpuCheck.eval does the rest: a fact that could not be read
// is unreadable, and the finding becomes a result in the GPU's scope.

// gpuCheck is one check of one GPU.
type gpuCheck struct {
	read  func(GPUFacts) error // the error reading the fact judged; nil: none
	judge func(GPUFacts, Expect) finding
}

// finding is what a check found on one GPU: ok with the value seen,
// failed or skipped with why, or a fact it could not read (err).
type finding struct {
	status Status
	text   string
	err    error
	// code is a failure's code where it is not its check's first.
	code string
}

func passed(value string) finding { return finding{status: OK, text: value} }
func failed(why string) finding   { return finding{status: Fail, text: why} }

// failedAs is failed with code (a name in checkCodes).
func failedAs(code, why string) finding { return finding{status: Fail, text: why, code: code} }
func skipped(why string) finding        { return finding{status: Skip, text: why} }
func unread(err error) finding          { return finding{err: err} }

// The facts a check reads, by their read error.
func settingsRead(g GPUFacts) error { return g.SettingsErr }
func healthRead(g GPUFacts) error   { return g.HealthErr }
func pcieRead(g GPUFacts) error     { return g.PCIeErr }
func throttleRead(g GPUFacts) error { return g.ThrottleErr }

// eval is check c on the GPU of g: unreadable when its fact could not be
// read, else what judge found, in the GPU's scope.
func (k gpuCheck) eval(c string, g GPUFacts, e Expect) Result {
	s := gpuScope(g.Dev)
	var f finding
	if k.read != nil {
		f.err = k.read(g)
	}
	if f.err == nil {
		f = k.judge(g, e)
	}
	switch {
	case f.err != nil:
		return unreadable(c, s, f.err)
	case f.status == Skip:
		return skip(c, s, f.text)
	case f.status == Fail:
		r := fail(c, s, f.text)
		if code, ok := CodeOf(f.code); ok {
			r = r.withCode(code)
		}
		return r
	}
	return ok(c, s, f.text)
}

// judgePersistence: persistence mode on.
func judgePersistence(g GPUFacts, _ Expect) finding {
	switch {
	case has(g.Settings.Unsupported, "persistence"):
		return skipped("persistence mode not supported")
	case !g.Settings.Persistence:
		return failed("persistence mode is off")
	}
	return passed("on")
}

// judgeECCMode: ECC on, and staying on after the next GPU reset.
func judgeECCMode(g GPUFacts, _ Expect) finding {
	switch {
	case has(g.Settings.Unsupported, "ecc_enabled"):
		return skipped("ECC not supported")
	case !g.Settings.ECCEnabled:
		return failed("ECC is disabled")
	case !g.Settings.ECCPending:
		return failed("ECC is to be disabled at the next GPU reset")
	}
	return passed("on")
}

// judgeECCVolatile: no volatile uncorrectable ECC error.
func judgeECCVolatile(g GPUFacts, _ Expect) finding {
	if has(g.Health.Unsupported, "ecc_volatile_uncorrected") {
		return skipped("ECC counters not supported")
	}
	if n := g.Health.ECCVolatileUncorrected; n > 0 {
		return failed(fmt.Sprintf("%d volatile uncorrectable ECC %s", n, map[bool]string{true: "error", false: "errors"}[n == 1]))
	}
	return passed("0")
}

// judgeRowRemap: no failed or pending row remapping, no pending page
// retirement.
func judgeRowRemap(g GPUFacts, _ Expect) finding {
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
	switch {
	case h.RemappingFailed:
		return failedAs("ROW_REMAP_FAILED", strings.Join(probs, ", "))
	case len(probs) > 0:
		return failed(strings.Join(probs, ", "))
	}
	if has(h.Unsupported, "remapping_failed") && has(h.Unsupported, "retired_pages_pending") {
		return skipped("neither row remapping nor page retirement supported")
	}
	return passed("none pending")
}

// judgeNVLinks: as many active NVLinks as [health] nvlinks or the model
// file want (-1: all the GPU has). It reads the links only when a count is
// expected, so it names no fact up front.
func judgeNVLinks(g GPUFacts, e Expect) finding {
	want, from := e.Health.NVLinks, "health.nvlinks"
	if want == 0 {
		if m, ok := e.Models.For(g.Dev.Name); ok && m.NVLinks > 0 {
			want, from = m.NVLinks, "model file"
		}
	}
	if want == 0 {
		return skipped("no expected count (health.nvlinks, model file)")
	}
	if g.LinksErr != nil {
		if errors.Is(g.LinksErr, gpu.ErrUnsupported) && !strings.Contains(g.LinksErr.Error(), "backend cannot") {
			return failed(fmt.Sprintf("NVML reports no NVLink, want %d active (%s)", want, from))
		}
		return unread(g.LinksErr)
	}
	if want < 0 {
		want, from = g.LinksTotal, "all the GPU has"
	}
	if g.LinksActive < want {
		return failed(fmt.Sprintf("%d of %d NVLinks active, want %d (%s)", g.LinksActive, g.LinksTotal, want, from))
	}
	return passed(fmt.Sprintf("%d active", g.LinksActive))
}

// judgePCIe compares the GPU's link width with the model file's or the
// link's maximum, and its speed likewise, except on an idle GPU: NVIDIA
// GPUs lower their link speed when idle, so an idle GPU's speed says
// nothing (its width does).
func judgePCIe(g GPUFacts, e Expect) finding {
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
		return failed("PCIe " + strings.Join(probs, ", "))
	}
	v := fmt.Sprintf("x%d %s", l.Width, l.Speed)
	if idle {
		v += " (idle: speed not compared)"
	}
	return passed(v)
}

// judgeThrottle: no clock throttle reason of gpu.ThrottleBad.
func judgeThrottle(g GPUFacts, _ Expect) finding {
	if bad := g.Throttle & gpu.ThrottleBad; bad != 0 {
		return failed("clocks throttled: " + strings.Join(gpu.ThrottleNames(bad), ", "))
	}
	return passed(strings.Join(append([]string{"none bad"}, gpu.ThrottleNames(g.Throttle)...), ", "))
}
