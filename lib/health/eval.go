package health

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
	"gpuprep/lib/plural"
)

// Expect is what the checks compare against: the [health] section and the
// per-model file.
type Expect struct {
	Health config.HealthSection
	Models Models
}

// Events are what the xid check judges besides the facts: the new Xids
// (State.Advance), each GPU's history, and whether the history's fatal
// Xids stand against the GPUs in scope (the prolog and gpuprep-health; the
// epilog judges only the new ones, so a job's end never drains the node
// again for what was reported before).
type Events struct {
	New      []XID
	History  map[string]GPUHistory
	AppJobs  map[string][]AppXIDJob // by bus id: only where Standing
	Standing bool
}

// Evaluate turns facts into one result per check and scope, for the checks
// named in checks (in config.HealthChecks order). Failures carry the
// check's configured severity; debouncing is Run's. It does no I/O.
func Evaluate(f *Facts, e Expect, checks []string, ev Events) []Result {
	var out []Result
	for _, c := range config.HealthChecks {
		if !slices.Contains(checks, c) {
			continue
		}
		sev := e.Health.HealthSeverity(c)
		if sev == config.HealthOff {
			out = append(out, skip(c, nodeScope, "off in [health.severity]"))
			continue
		}
		var rs []Result
		switch c {
		case "gpu_count":
			rs = []Result{evalGPUCount(f, e)}
		case "driver_version":
			rs = []Result{evalDriver(f, e)}
		case "ib_ports":
			rs = evalIB(f, e)
		case "swap":
			rs = []Result{evalSwap(f, e)}
		case "nccl_topo":
			rs = []Result{evalTopo(f, e)}
		case "cmdqv":
			rs = []Result{evalCMDQV(f)}
		case "xid":
			rs = evalXIDs(f, e, ev, out)
		case "probe":
			rs = evalProbe(f, e)
		default:
			check, ok := gpuChecks[c]
			if !ok {
				continue // epilog checks, evaluated by Run
			}
			if len(f.GPUs) == 0 {
				rs = []Result{skip(c, nodeScope, "no GPUs in scope")}
			}
			for _, g := range f.GPUs {
				r := check.eval(c, g, e)
				r.BusID = g.Dev.BusID
				rs = append(rs, r)
			}
		}
		for _, r := range rs {
			if r.Status == Fail && r.Severity == "" {
				r.Severity = sev
			}
			out = append(out, r)
		}
	}
	return out
}

// gpuChecks are the checks of one GPU.
var gpuChecks = map[string]gpuCheck{
	"persistence":  {settingsRead, judgePersistence},
	"ecc_mode":     {settingsRead, judgeECCMode},
	"ecc_volatile": {healthRead, judgeECCVolatile},
	"row_remap":    {healthRead, judgeRowRemap},
	"nvlinks":      {nil, judgeNVLinks},
	"pcie_link":    {pcieRead, judgePCIe},
	"throttle":     {throttleRead, judgeThrottle},
}

// unreadable is the result of a fact that could not be read: skipped when
// the backend or node cannot tell (unsupported, absent file), else failed
// with the error (a GPU that stopped answering NVML is a node problem).
func unreadable(check, scope string, err error) Result {
	if errors.Is(err, gpu.ErrUnsupported) || errors.Is(err, fs.ErrNotExist) {
		return skip(check, scope, err.Error())
	}
	// NVML's errors name the GPU already: "nvml: GPU 3 (0000:5d:00.0): ...".
	return fail(check, scope, strings.TrimPrefix(err.Error(), "nvml: "+scope+": ")).withCode(unreadableCode(check))
}

func has(list []string, field string) bool { return slices.Contains(list, field) }

func evalGPUCount(f *Facts, e Expect) Result {
	const c = "gpu_count"
	if f.NoBackend != "" {
		return evalNoBackend(f, e)
	}
	if f.Backend == "" || f.Backend == "none" {
		return skip(c, nodeScope, "the GPU backend is none")
	}
	if f.DevicesErr != nil {
		return fail(c, nodeScope, fmt.Sprintf("cannot list GPUs: %v", f.DevicesErr))
	}
	want, from := e.Health.GPUCount, "health.gpu_count"
	if want == 0 {
		if f.OnBusErr != nil {
			return unreadable(c, nodeScope, f.OnBusErr)
		}
		want, from = len(f.OnBus), "NVIDIA GPUs on the PCI bus"
		if want == 0 {
			return skip(c, nodeScope, "no NVIDIA GPU on the PCI bus to compare with (set health.gpu_count)")
		}
	}
	got := len(f.Devices)
	if got != want {
		return fail(c, nodeScope, fmt.Sprintf("the %s backend lists %s, want %d (%s)", f.Backend, plural.Count(got, "GPU", "GPUs"), want, from))
	}
	return ok(c, nodeScope, plural.Count(got, "GPU", "GPUs"))
}

// driverMin is the highest minimum the config and the models of the node's
// GPUs name, and where it came from.
func driverMin(f *Facts, e Expect) (string, string) {
	min, from := e.Health.DriverMin, "health.driver_min"
	for _, d := range f.Devices {
		if m, ok := e.Models.For(d.Name); ok && m.DriverMin != "" && (min == "" || compareVersions(m.DriverMin, min) > 0) {
			min, from = m.DriverMin, "model file, "+d.Name
		}
	}
	return min, from
}

func evalDriver(f *Facts, e Expect) Result {
	const c = "driver_version"
	if f.DriverErr != nil {
		return unreadable(c, nodeScope, f.DriverErr)
	}
	min, from := driverMin(f, e)
	if min == "" {
		return ok(c, nodeScope, f.Driver+" (no minimum set)")
	}
	if compareVersions(f.Driver, min) < 0 {
		return fail(c, nodeScope, fmt.Sprintf("NVIDIA driver %s is older than %s (%s)", f.Driver, min, from))
	}
	return ok(c, nodeScope, fmt.Sprintf("%s >= %s", f.Driver, min))
}

func evalIB(f *Facts, e Expect) []Result {
	const c = "ib_ports"
	h := e.Health
	if len(h.IBDevices) == 0 && h.IBRateGbps == 0 {
		return []Result{skip(c, nodeScope, "not configured (health.ib_devices, health.ib_rate_gbps)")}
	}
	if f.IBErr != nil {
		return []Result{unreadable(c, nodeScope, f.IBErr)}
	}
	var out []Result
	seen := map[string]bool{}
	for _, p := range f.IB {
		if len(h.IBDevices) > 0 && !slices.Contains(h.IBDevices, p.Device) || len(h.IBDevices) == 0 && p.LinkLayer != "InfiniBand" {
			continue
		}
		seen[p.Device] = true
		scope := fmt.Sprintf("%s port %d", p.Device, p.Port)
		switch {
		case p.State != "ACTIVE":
			out = append(out, failWhole(c, scope, fmt.Sprintf("InfiniBand %s is %s, want ACTIVE", scope, p.State)))
		case h.IBRateGbps > 0 && p.RateGbps != h.IBRateGbps:
			out = append(out, failWhole(c, scope, fmt.Sprintf("InfiniBand %s runs at %s, want %d Gb/sec", scope, p.Rate, h.IBRateGbps)))
		default:
			out = append(out, ok(c, scope, "ACTIVE "+p.Rate))
		}
	}
	for _, d := range h.IBDevices {
		if !seen[d] {
			out = append(out, failWhole(c, d, fmt.Sprintf("InfiniBand device %s not found (health.ib_devices)", d)))
		}
	}
	if len(out) == 0 {
		out = append(out, fail(c, nodeScope, fmt.Sprintf("no InfiniBand port found, want %d Gb/sec (health.ib_rate_gbps)", h.IBRateGbps)))
	}
	return out
}

func evalSwap(f *Facts, e Expect) Result {
	const c = "swap"
	if f.SwapErr != nil {
		return unreadable(c, nodeScope, f.SwapErr)
	}
	on := len(f.Swap.Devices) > 0 || f.Swap.TotalKB > 0
	v := "off"
	if on {
		v = fmt.Sprintf("on: %d MiB", f.Swap.TotalKB/1024)
		if len(f.Swap.Devices) > 0 {
			v += " (" + strings.Join(f.Swap.Devices, ", ") + ")"
		}
	}
	if e.Health.Swap == "off" && on {
		return fail(c, nodeScope, "swap is "+v+", want off (health.swap)")
	}
	return ok(c, nodeScope, v)
}

func evalTopo(f *Facts, e Expect) Result {
	const c = "nccl_topo"
	p := e.Health.NCCLTopoFile
	if p == "" {
		return skip(c, nodeScope, "not configured (health.nccl_topo_file)")
	}
	if f.TopoErr != nil {
		if errors.Is(f.TopoErr, fs.ErrNotExist) {
			return fail(c, nodeScope, fmt.Sprintf("NCCL topology file %s does not exist", p))
		}
		return fail(c, nodeScope, fmt.Sprintf("NCCL topology file: %v", f.TopoErr))
	}
	return ok(c, nodeScope, fmt.Sprintf("%s (%s)", p, plural.Count(f.TopoCPUs, "CPU", "CPUs")))
}

func evalCMDQV(f *Facts) Result {
	const c = "cmdqv"
	switch x := f.CMDQV; {
	case !x.ARM64:
		return skip(c, nodeScope, "not an arm64 node")
	case !x.VM:
		return skip(c, nodeScope, "not a virtual machine")
	case x.Loaded == "":
		return fail(c, nodeScope, fmt.Sprintf("arm64 VM (%s) without the SMMU CMDQV driver (tegra241_cmdqv): SMMU command queues trap to the hypervisor (12%% lost in a published case)", x.Hypervisor))
	default:
		return ok(c, nodeScope, x.Loaded)
	}
}

// evalXIDs is the xid check: a warning naming the kernel log records lost
// before they were read (or a skip when the log cannot be read), and one
// result per GPU with anything against it (gpuXID), new Xids' GPUs first;
// "no new XIDs" when nothing is. prior are the results so far (row_remap's
// evidence).
func evalXIDs(f *Facts, e Expect, ev Events, prior []Result) []Result {
	const c = "xid"
	var out []Result
	switch {
	case !f.KmsgRead:
		err := f.KmsgErr
		if err == nil {
			err = errors.New("kernel log not read")
		}
		out = append(out, skip(c, nodeScope, "cannot read the kernel log: "+err.Error()))
	case len(f.KmsgLost) > 0:
		out = append(out, lostRecords(f.KmsgLost))
	}
	j := xidJudge{f: f, e: e, ev: ev, byBus: map[string][]XID{}, standing: map[string][]Standing{}, gpus: map[string]GPUFacts{}}
	j.gather(prior)
	for _, bus := range j.order {
		if r, ok := j.gpuXID(bus); ok {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return []Result{ok(c, nodeScope, "no new XIDs")}
	}
	return out
}

// xidJudge holds what evalXIDs judges, by GPU bus id.
type xidJudge struct {
	f        *Facts
	e        Expect
	ev       Events
	order    []string         // the GPUs to judge: new Xids' first, then the scope's, then the history's
	byBus    map[string][]XID // new Xids
	standing map[string][]Standing
	gpus     map[string]GPUFacts // the GPUs in scope
}

func (j *xidJudge) gather(prior []Result) {
	seen := map[string]bool{}
	add := func(bus string) {
		if !seen[bus] {
			seen[bus] = true
			j.order = append(j.order, bus)
		}
	}
	for _, x := range j.ev.New {
		x.Severity = XIDSeverity(j.e.Health, x.Code, x.To)
		j.byBus[x.BusID] = append(j.byBus[x.BusID], x)
		add(x.BusID)
	}
	for _, g := range j.f.GPUs {
		j.gpus[g.Dev.BusID] = g
		add(g.Dev.BusID)
	}
	if !j.ev.Standing {
		return
	}
	for _, s := range StandingXIDs(j.ev.History, j.e.Health, remapOKOf(prior)) {
		if _, inScope := j.gpus[s.BusID]; inScope || j.f.Whole {
			j.standing[s.BusID] = append(j.standing[s.BusID], s)
			add(s.BusID)
		}
	}
}

// gpuXID is one GPU's xid result: its new Xids, the fatal Xids that stand
// against it (those not new in this run), and the driver's recovery
// action when it is not none; ok false when there is nothing to say.
func (j *xidJudge) gpuXID(bus string) (Result, bool) {
	const c = "xid"
	sev := config.HealthOff
	var parts []string
	var code codePick
	fresh := map[int]bool{}
	for _, x := range j.byBus[bus] {
		sev = worse(sev, x.Severity)
		fresh[x.Code] = true
		parts = append(parts, fmt.Sprintf("Xid %d (%s)", x.Code, xidText(x.Code, x.Text, x.To)))
		code.add(xidCode(x.Code), x.Severity)
	}
	for _, s := range j.standing[bus] {
		if !fresh[s.Code] {
			sev = worse(sev, lower(config.HealthFatal, j.e.Health.HealthSeverity(c)))
			parts = append(parts, s.describe())
			code.add(xidCode(s.Code), config.HealthFatal)
		}
	}
	if p, s := j.appJobs(bus); p != "" {
		sev = worse(sev, s)
		parts = append(parts, p)
		code.add(appJobsCode, s)
	}
	if g, ok := j.gpus[bus]; ok {
		if p, s, rc := recoveryPart(g, j.e); p != "" {
			sev = worse(sev, s)
			parts = append(parts, p)
			code.add(rc, s)
		}
	}
	if len(parts) == 0 {
		return Result{}, false
	}
	scope := j.scope(bus)
	if sev == config.HealthOff {
		return ok(c, scope, "ignored: "+strings.Join(parts, "; ")), true
	}
	r := fail(c, scope, strings.Join(parts, "; ")).withCode(code.best)
	r.BusID, r.Severity = bus, sev
	return r, true
}

// appJobs is appJobsPart of bus's application faults, where the judged
// run lets findings of earlier runs stand (the prolog's, gpuprep-health's)
// and bus is in scope.
func (j *xidJudge) appJobs(bus string) (string, string) {
	if _, inScope := j.gpus[bus]; !j.ev.Standing || !inScope && !j.f.Whole {
		return "", config.HealthOff
	}
	return appJobsPart(j.e.Health, j.ev.AppJobs[bus])
}

// codePick keeps the code of a GPU's xid result: of the findings with the
// worst severity, the one whose action does the most.
type codePick struct {
	best Code
	sev  string
}

func (p *codePick) add(c Code, sev string) {
	switch {
	case p.best.Name == "", worse(p.sev, sev) != p.sev:
		p.best, p.sev = c, sev
	case sev == p.sev && stronger(p.best.Action, c.Action) != p.best.Action:
		p.best = c
	}
}

// scope names the GPU at bus: "GPU 0 (0000:18:00.0)", or "GPU ? (...)"
// for one the backend does not list.
func (j *xidJudge) scope(bus string) string { return busScope(bus, j.f.Devices) }

// recoveryPart is what the GPU's recovery action adds to its xid result,
// and its severity: "" for none, or for a backend or driver that cannot
// tell (a skip, never a failure); the action the driver asks for, fatal
// (capped by the xid check's severity); a read that failed otherwise, a
// warning: a GPU NVML lost fails its other checks, and a driver quirk in
// one field must not drain every node.
func recoveryPart(g GPUFacts, e Expect) (string, string, Code) {
	sev := e.Health.HealthSeverity("xid")
	switch {
	case errors.Is(g.RecoveryErr, gpu.ErrUnsupported):
		return "", "", Code{}
	case g.RecoveryErr != nil:
		return "recovery action unreadable: " + strings.TrimPrefix(g.RecoveryErr.Error(), "nvml: "), lower(config.HealthWarn, sev), unreadableCode("xid")
	case g.Recovery == gpu.RecoveryNone:
		return "", "", Code{}
	}
	return "driver recovery action: " + g.Recovery.String(), lower(config.HealthFatal, sev), recoveryCode(g.Recovery)
}

// xidText is an Xid's text in a reason: its line's, or for an Xid 154
// that names it, the action it changed to.
func xidText(code int, text string, to *gpu.RecoveryAction) string {
	if code == XIDRecoveryChanged && to != nil {
		return "recovery action changed to " + to.String()
	}
	return text
}

// lostRecords is the warning for kernel log records lost before gpuprep
// read them (the log overflowed: anyone can flood it): XIDs in them are
// unknown, which is neither clean nor a reason to drain.
func lostRecords(gaps []Gap) Result {
	var ranges []string
	for _, g := range gaps {
		ranges = append(ranges, g.String())
	}
	r := fail("xid", nodeScope, fmt.Sprintf("XIDs unknown: kernel log records %s were lost before gpuprep read them (the log overflowed); no GPU's XID history is cleared by this run",
		strings.Join(ranges, ", ")))
	r.Severity = config.HealthWarn
	return r
}

func worse(a, b string) string {
	if lower(a, b) == a {
		return b
	}
	return a
}
