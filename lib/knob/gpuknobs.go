package knob

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"gpuprep/lib/gpu"
)

// GPU knobs, one of each per GPU of the job, scope GPUScope(uuid), over a
// gpu.Backend and the GPU's index:
//
//	gpu_persistence        "on" | "off"
//	gpu_compute_mode       "default" | "exclusive_process" | "prohibited"
//	gpu_app_clocks_mhz     "<mem>,<sm>" (Read: the pair in force); "default" resets
//	gpu_locked_clocks_mhz  "<min>,<max>" | "unlocked"; Read gives Unknown
//	gpu_power_limit_w      watts: "300", or "299.5" when not whole; "default"
//
// Settings' NOT_SUPPORTED fields, and a backend's ErrUnsupported or
// ErrReadOnly (procfs), are ErrUnsupported. Apply verifies by reading the
// GPU's settings back, except for locked clocks, which NVML cannot read.
type gpuKnob struct {
	id    ID
	b     gpuControl
	index int
	run   *Run // the run that built it
}

// maxPowerW bounds gpu_power_limit_w in the configuration.
const maxPowerW = 5000

func init() {
	for _, d := range []Def{{
		Name: "gpu_persistence", Order: 1010,
		Example: `true`,
		Doc:     "persistence mode (reads the GPU's settings, SetPersistence); true or false",
		Decode:  decodeOnOff,
		New:     func(r *Run, id ID) Knob { return &persistenceKnob{r.gpuBase(id)} },
	}, {
		Name: "gpu_compute_mode", Order: 1020,
		Example: `"exclusive_process"`,
		Doc:     "compute mode (reads the GPU's settings, SetComputeMode); " + strings.Join(computeModes, ", "),
		Decode:  decodeOneOf(computeModes...),
		New:     func(r *Run, id ID) Knob { return &computeModeKnob{r.gpuBase(id)} },
	}, {
		Name: "gpu_locked_clocks_mhz", Order: 1030,
		Example: `[1980, 1980]`,
		Doc:     "locked SM clock range (SetLockedClocks, ResetLockedClocks; cannot be read back); [min, max] in MHz, [] = unlocked",
		Decode:  decodeLockedClocks,
		New:     func(r *Run, id ID) Knob { return &lockedClocksKnob{r.gpuBase(id)} },
	}, {
		Name: "gpu_app_clocks_mhz", Order: 1040,
		Example: `{mem = 2619, sm = 1980}`,
		Doc:     "application clocks (reads the GPU's settings, SetApplicationClocks, ResetApplicationClocks); {mem, sm} in MHz, {} = the driver's default",
		Decode:  decodeAppClocks,
		New:     func(r *Run, id ID) Knob { return &appClocksKnob{r.gpuBase(id)} },
	}, {
		Name: "gpu_power_limit_w", Order: 1050,
		Example: `500`,
		Doc:     "power limit (reads the GPU's settings, SetPowerLimit); watts 0..5000, 0 = the GPU's default limit",
		Decode: func(raw any) (string, error) {
			s, err := decodeInt(0, maxPowerW)(raw)
			if s == "0" {
				s = "default"
			}
			return s, err
		},
		New: func(r *Run, id ID) Knob { return &powerKnob{r.gpuBase(id)} },
	}} {
		d.Kind = GPUKind
		Register(d)
	}
}

// decodeLockedClocks accepts [min, max] (1 <= min <= max <= maxClockMHz) as
// "min,max", or [] as "unlocked".
func decodeLockedClocks(raw any) (string, error) {
	bad := fmt.Errorf("must be [min, max] in MHz (1..%d, min <= max), or [] to unlock", maxClockMHz)
	list, ok := raw.([]any)
	if !ok || (len(list) != 0 && len(list) != 2) {
		return "", bad
	}
	if len(list) == 0 {
		return "unlocked", nil
	}
	var mhz [2]int64
	for i, e := range list {
		n, ok := e.(int64)
		if !ok || n < 1 || n > maxClockMHz {
			return "", bad
		}
		mhz[i] = n
	}
	if mhz[0] > mhz[1] {
		return "", bad
	}
	return fmt.Sprintf("%d,%d", mhz[0], mhz[1]), nil
}

// decodeAppClocks accepts {mem, sm} (each 1..maxClockMHz) as "mem,sm", or
// {} (both 0) as "default".
func decodeAppClocks(raw any) (string, error) {
	tbl, ok := raw.(map[string]any)
	if !ok {
		return "", errType("a table")
	}
	var mhz [2]int64
	for _, k := range slices.Sorted(maps.Keys(tbl)) {
		i := slices.Index([]string{"mem", "sm"}, k)
		if i < 0 {
			return "", &ValueError{Key: k, Unknown: true}
		}
		n, ok := tbl[k].(int64)
		if !ok {
			return "", &ValueError{Key: k, Msg: "must be an integer"}
		}
		mhz[i] = n
	}
	if mhz == [2]int64{} { // {}, or {mem = 0, sm = 0}
		return "default", nil
	}
	if mhz[0] < 1 || mhz[0] > maxClockMHz || mhz[1] < 1 || mhz[1] > maxClockMHz {
		return "", &ValueError{Shown: fmt.Sprintf("{mem = %d, sm = %d}", mhz[0], mhz[1]),
			Msg: fmt.Sprintf("both must be 1..%d MHz ({} resets them)", maxClockMHz)}
	}
	return fmt.Sprintf("%d,%d", mhz[0], mhz[1]), nil
}

func (k *gpuKnob) ID() ID { return k.id }

// wrap maps a backend error: unsupported or read-only becomes
// ErrUnsupported; the backend's message is kept.
func (k *gpuKnob) wrap(err error) error {
	if errors.Is(err, gpu.ErrUnsupported) || errors.Is(err, gpu.ErrReadOnly) {
		return fmt.Errorf("%s: %w: %w", k.id, ErrUnsupported, err)
	}
	return fmt.Errorf("%s: %w", k.id, err)
}

// settings reads the GPU's settings and checks that the named fields are
// known.
func (k *gpuKnob) settings(fields ...string) (gpu.Settings, error) {
	s, err := k.b.Settings(k.index, fieldsOf(fields))
	if err != nil {
		return s, k.wrap(err)
	}
	for _, f := range fields {
		if slices.Contains(s.Unsupported, f) {
			return s, fmt.Errorf("%s: GPU %d cannot report %s: %w", k.id, k.index, f, ErrUnsupported)
		}
	}
	return s, nil
}

// verify compares the value read back after a change.
func (k *gpuKnob) verify(want Value, read func() (Value, error)) error {
	have, err := read()
	if err != nil {
		return err
	}
	if have != want {
		return &MismatchError{ID: k.id, Want: want, Have: have}
	}
	return nil
}

// --- persistence

type persistenceKnob struct{ gpuKnob }

func (k *persistenceKnob) Read() (Value, error) {
	s, err := k.settings("persistence")
	if err != nil {
		return "", err
	}
	return onOff(s.Persistence), nil
}

func onOff(b bool) Value {
	if b {
		return "on"
	}
	return "off"
}

func (k *persistenceKnob) Desired(setting string) (Value, error) {
	switch strings.ToLower(strings.TrimSpace(setting)) {
	case "on", "true", "1", "enabled":
		return "on", nil
	case "off", "false", "0", "disabled":
		return "off", nil
	}
	return "", fmt.Errorf("%s: %q is not on or off", k.id, clip(setting))
}

func (k *persistenceKnob) Apply(v Value) error {
	want, err := k.Desired(string(v))
	if err != nil {
		return err
	}
	if err := k.b.SetPersistence(k.index, want == "on"); err != nil {
		return k.wrap(err)
	}
	return k.verify(want, k.Read)
}

// --- compute mode

type computeModeKnob struct{ gpuKnob }

var computeModes = []string{string(gpu.ComputeDefault), string(gpu.ComputeExclusiveProcess), string(gpu.ComputeProhibited)}

func (k *computeModeKnob) Read() (Value, error) {
	s, err := k.settings("compute_mode")
	if err != nil {
		return "", err
	}
	return Value(s.ComputeMode), nil
}

func (k *computeModeKnob) Desired(setting string) (Value, error) {
	m := strings.ToLower(strings.TrimSpace(setting))
	if !slices.Contains(computeModes, m) {
		return "", fmt.Errorf("%s: %q is not a compute mode (want %s)", k.id, clip(setting), strings.Join(computeModes, ", "))
	}
	return Value(m), nil
}

func (k *computeModeKnob) Apply(v Value) error {
	want, err := k.Desired(string(v))
	if err != nil {
		return err
	}
	if err := k.b.SetComputeMode(k.index, gpu.ComputeMode(want)); err != nil {
		return k.wrap(err)
	}
	return k.verify(want, k.Read)
}

// --- clock pairs

// maxClockMHz bounds a clock in MHz (as the configuration does).
const maxClockMHz = 10000

// parsePair reads "<a>,<b>", both 1..maxClockMHz.
func parsePair(s string) (uint32, uint32, bool) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), ",")
	if !ok {
		return 0, 0, false
	}
	x, err1 := strconv.ParseUint(strings.TrimSpace(a), 10, 32)
	y, err2 := strconv.ParseUint(strings.TrimSpace(b), 10, 32)
	if err1 != nil || err2 != nil || x < 1 || y < 1 || x > maxClockMHz || y > maxClockMHz {
		return 0, 0, false
	}
	return uint32(x), uint32(y), true
}

func pair(a, b uint32) Value { return Value(fmt.Sprintf("%d,%d", a, b)) }

// --- application clocks

// appClockDefaults is a backend that can report a GPU's default
// application clocks (NVML's GetDefaultApplicationsClock). With it,
// "default" resolves to the pair a reset gives, so it is verified and
// compares equal with what Read returns; without it, "default" stays as it
// is and a reset is taken on the backend's word.
type appClockDefaults interface {
	DefaultApplicationClocks(index int) (memMHz, smMHz uint32, err error)
}

type appClocksKnob struct{ gpuKnob }

func (k *appClocksKnob) Read() (Value, error) {
	s, err := k.settings("app_clock_mem_mhz", "app_clock_sm_mhz")
	if err != nil {
		return "", err
	}
	return pair(s.AppClockMemMHz, s.AppClockSMMHz), nil
}

func (k *appClocksKnob) Desired(setting string) (Value, error) {
	s := strings.ToLower(strings.TrimSpace(setting))
	if s == "default" {
		if d, ok := k.b.(appClockDefaults); ok {
			mem, sm, err := d.DefaultApplicationClocks(k.index)
			if err != nil {
				return "", k.wrap(err)
			}
			return pair(mem, sm), nil
		}
		return "default", nil
	}
	mem, sm, ok := parsePair(s)
	if !ok {
		return "", fmt.Errorf("%s: %q is not <mem>,<sm> in MHz (1..%d each) or default", k.id, clip(setting), maxClockMHz)
	}
	if l, ok := k.limits(); ok && l.MaxSMClockMHz > 0 && (sm > l.MaxSMClockMHz || mem > l.MaxMemClockMHz) {
		return "", fmt.Errorf("%s: %d,%d MHz is above what GPU %d runs (memory %d, SM %d MHz)", k.id, mem, sm, k.index, l.MaxMemClockMHz, l.MaxSMClockMHz)
	}
	return pair(mem, sm), nil
}

func (k *appClocksKnob) Apply(v Value) error {
	want, err := k.Desired(string(v))
	if err != nil {
		return err
	}
	if strings.EqualFold(strings.TrimSpace(string(v)), "default") {
		err = k.b.ResetApplicationClocks(k.index)
	} else {
		mem, sm, _ := parsePair(string(want))
		err = k.b.SetApplicationClocks(k.index, mem, sm)
	}
	if err != nil {
		return k.wrap(err)
	}
	if want == "default" {
		return nil // no default pair to compare with: the backend's word
	}
	return k.verify(want, k.Read)
}

// --- locked clocks

// lockedClocksKnob locks the SM clock to a range. NVML has no getter for
// locked clocks, so Read returns Unknown (after checking that the GPU's
// settings can be read at all) and Apply cannot verify: it trusts the
// backend's return code. Apply("unlocked") and Apply(Unknown) both reset
// the locked clocks, so a baseline recorded as Unknown restores by
// unlocking, which is the driver's default.
type lockedClocksKnob struct{ gpuKnob }

func (k *lockedClocksKnob) Read() (Value, error) {
	if _, err := k.settings(); err != nil {
		return "", err
	}
	return Unknown, nil
}

func (k *lockedClocksKnob) Desired(setting string) (Value, error) {
	s := strings.ToLower(strings.TrimSpace(setting))
	if s == "unlocked" {
		return "unlocked", nil
	}
	lo, hi, ok := parsePair(s)
	if !ok || lo > hi {
		return "", fmt.Errorf("%s: %q is not <min>,<max> in MHz (1..%d, min <= max) or unlocked", k.id, clip(setting), maxClockMHz)
	}
	if l, ok := k.limits(); ok && l.MaxSMClockMHz > 0 && hi > l.MaxSMClockMHz {
		return "", fmt.Errorf("%s: %d,%d MHz is above GPU %d's highest SM clock (%d MHz)", k.id, lo, hi, k.index, l.MaxSMClockMHz)
	}
	return pair(lo, hi), nil
}

func (k *lockedClocksKnob) Apply(v Value) error {
	var err error
	if v == Unknown {
		err = k.b.ResetLockedClocks(k.index)
	} else {
		var want Value
		if want, err = k.Desired(string(v)); err != nil {
			return err
		}
		if want == "unlocked" {
			err = k.b.ResetLockedClocks(k.index)
		} else {
			lo, hi, _ := parsePair(string(want))
			err = k.b.SetLockedClocks(k.index, lo, hi)
		}
	}
	if err != nil {
		return k.wrap(err)
	}
	return nil
}

// --- power limit

type powerKnob struct{ gpuKnob }

// formatWatts is milliwatts as watts: "700", or "699.5" when not whole.
func formatWatts(mw uint32) Value {
	if mw%1000 == 0 {
		return Value(strconv.FormatUint(uint64(mw/1000), 10))
	}
	frac := strings.TrimRight(fmt.Sprintf("%03d", mw%1000), "0")
	return Value(fmt.Sprintf("%d.%s", mw/1000, frac))
}

// parseWatts reads watts with up to three decimals into milliwatts.
func parseWatts(s string) (uint32, bool) {
	w, frac, _ := strings.Cut(s, ".")
	if w == "" || len(frac) > 3 {
		return 0, false
	}
	for _, part := range []string{w, frac} {
		for i := 0; i < len(part); i++ {
			if part[i] < '0' || part[i] > '9' {
				return 0, false
			}
		}
	}
	n, err := strconv.ParseUint(w, 10, 32)
	if err != nil || n > 100000 {
		return 0, false
	}
	mw := uint32(n) * 1000
	if frac != "" {
		f, _ := strconv.ParseUint((frac + "00")[:3], 10, 32)
		mw += uint32(f)
	}
	return mw, true
}

func (k *powerKnob) Read() (Value, error) {
	s, err := k.settings("power_limit_mw")
	if err != nil {
		return "", err
	}
	return formatWatts(s.PowerLimitMW), nil
}

// Desired accepts watts, or "default" (also 0, as the configuration spells
// it), which resolves to the GPU's default limit.
func (k *powerKnob) Desired(setting string) (Value, error) {
	s := strings.ToLower(strings.TrimSpace(setting))
	if s == "default" || s == "0" {
		st, err := k.settings("default_power_limit_mw")
		if err != nil {
			return "", err
		}
		return formatWatts(st.DefaultPowerMW), nil
	}
	mw, ok := parseWatts(s)
	if !ok || mw == 0 {
		return "", fmt.Errorf("%s: %q is not a power limit in watts (or default)", k.id, clip(setting))
	}
	if l, ok := k.limits(); ok && l.MaxPowerMW > 0 && (mw < l.MinPowerMW || mw > l.MaxPowerMW) {
		return "", fmt.Errorf("%s: %s W is outside what GPU %d takes (%s..%s W)", k.id, formatWatts(mw), k.index, formatWatts(l.MinPowerMW), formatWatts(l.MaxPowerMW))
	}
	return formatWatts(mw), nil
}

func (k *powerKnob) Apply(v Value) error {
	want, err := k.Desired(string(v))
	if err != nil {
		return err
	}
	mw, _ := parseWatts(string(want))
	if err := k.b.SetPowerLimit(k.index, mw); err != nil {
		return k.wrap(err)
	}
	return k.verify(want, k.Read)
}
