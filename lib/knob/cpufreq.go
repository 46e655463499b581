package knob

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gpuprep/lib/suggest"
)

// cpufreqKnob is a per-CPU cpufreq attribute: cpu_governor
// (cpufreq/scaling_governor, checked against scaling_available_governors)
// or energy_performance_preference (cpufreq/energy_performance_preference,
// checked against energy_performance_available_preferences; a raw EPP
// number 0..255 is allowed too). Its Value follows the per-CPU scheme
// (percpu.go). It is unsupported when the first CPU in scope has no such
// file: no cpufreq in a VM, no EPP with acpi-cpufreq or on Grace.
//
// Order matters on intel_pstate: with the performance governor the driver
// refuses any EPP but "performance" (EBUSY), and switching to performance
// sets EPP to 0 itself. Apply and restore the governor before the EPP.
type cpufreqKnob struct {
	id    ID
	f     files
	cpus  *cpuScope
	file  string // under cpufreq/
	avail string // the list of accepted words, under cpufreq/
	epp   bool
}

// Governors a profile may set (cpufreq's scaling_governor), and the named
// energy performance preferences (a raw "0".."255" is also accepted).
var (
	governors = []string{"performance", "powersave", "schedutil", "ondemand", "conservative", "userspace"}
	eppNames  = []string{"default", "performance", "balance_performance", "balance_power", "power"}
)

func init() {
	Register(Def{
		Name: "cpu_governor", Kind: NodeKind, Order: 10,
		Example: `"performance"`,
		Doc:     "cpufreq scaling_governor of every CPU in scope (reads and writes cpu<N>/cpufreq/scaling_governor); a governor name",
		Decode:  decodeOneOf(governors...),
		Writes:  cpufreqWrites("scaling_governor"),
		New:     func(r *Run, _ ID) Knob { return newGovernor(r.f, r.cpus) },
	})
	Register(Def{
		Name: "energy_performance_preference", Kind: NodeKind, Order: 20,
		Example: `"balance_performance"`,
		Doc:     "cpufreq energy_performance_preference of every CPU in scope (reads and writes cpu<N>/cpufreq/energy_performance_preference); a name or \"0\"..\"255\"",
		Decode:  decodeEPP,
		Writes:  cpufreqWrites("energy_performance_preference"),
		New:     func(r *Run, _ ID) Knob { return newEPP(r.f, r.cpus) },
	})
}

// cpufreqWrites are a cpufreq file's paths: the policy's (where sysfs keeps
// it) and the CPU's (the link to it, or a fixture's folder).
func cpufreqWrites(file string) []string {
	return []string{"sys/devices/system/cpu/cpufreq/policy<N>/" + file, "sys/devices/system/cpu/cpu<N>/cpufreq/" + file}
}

// decodeEPP accepts a preference name or a raw value "0".."255".
func decodeEPP(raw any) (string, error) {
	s, ok := raw.(string)
	if !ok {
		return "", errType("a string")
	}
	if n, err := strconv.Atoi(s); (err == nil && n >= 0 && n <= 255) || slices.Contains(eppNames, s) {
		return s, nil
	}
	return "", fmt.Errorf("must be one of %s, or a raw value \"0\"..\"255\"%s", strings.Join(eppNames, ", "), suggest.DidYouMean(s, eppNames))
}

func newGovernor(f files, cpus *cpuScope) *cpufreqKnob {
	return &cpufreqKnob{id: ID{Name: "cpu_governor", Scope: NodeScope}, f: f, cpus: cpus,
		file: "scaling_governor", avail: "scaling_available_governors"}
}

func newEPP(f files, cpus *cpuScope) *cpufreqKnob {
	return &cpufreqKnob{id: ID{Name: "energy_performance_preference", Scope: NodeScope}, f: f, cpus: cpus,
		file: "energy_performance_preference", avail: "energy_performance_available_preferences", epp: true}
}

func (k *cpufreqKnob) ID() ID { return k.id }

func (k *cpufreqKnob) path(cpu int) string { return cpuFile(cpu, "cpufreq/"+k.file) }

// readAll reads every CPU's file once. Strict, an unreadable file or one
// that is not a single word is an error; loose (for Apply), such a CPU's
// value is "", which differs from every value Apply writes. Either way a
// file missing on the first CPU means the knob is unsupported.
func (k *cpufreqKnob) readAll(strict bool) ([]int, []string, error) {
	ids, err := k.cpus.list()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", k.id, err)
	}
	vals := make([]string, len(ids))
	err = forEach(len(ids), func(i int) error {
		p := k.path(ids[i])
		s, err := k.f.ReadString(p)
		switch {
		case err != nil && i == 0 && notExist(err):
			return unsupported(k.id, p)
		case err != nil && strict:
			return fmt.Errorf("%s: %w", k.id, err)
		case err == nil && !isWord(s) && strict:
			return fmt.Errorf("%s: %w", k.id, garbage(p, s, "one word"))
		case err == nil && isWord(s):
			vals[i] = s
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return ids, vals, nil
}

func (k *cpufreqKnob) Read() (Value, error) {
	ids, vals, err := k.readAll(true)
	if err != nil {
		return "", err
	}
	return formatPerCPU(ids, vals), nil
}

// canon is the canonical spelling of one CPU's value: lower case; for EPP
// a number 0..255 in decimal. Desired refuses EPP "default" (strict): the
// driver turns it into the boot-time preference and never reads it back,
// so it could never be verified nor compared; Apply lets it through.
func (k *cpufreqKnob) canon(s string, strict bool) (string, error) {
	w := strings.ToLower(strings.TrimSpace(s))
	if !isWord(w) {
		return "", fmt.Errorf("%s: %q is not a %s", k.id, clip(s), k.what())
	}
	if k.epp {
		if n, err := strconv.Atoi(w); err == nil {
			if n < 0 || n > 255 {
				return "", fmt.Errorf("%s: %q: a raw preference must be 0..255", k.id, s)
			}
			return strconv.Itoa(n), nil
		}
		if w == "default" && strict {
			return "", fmt.Errorf("%s: %q cannot be verified (the driver reads it back as the boot-time preference); name the preference instead", k.id, s)
		}
	}
	return w, nil
}

func (k *cpufreqKnob) what() string {
	if k.epp {
		return "energy performance preference"
	}
	return "governor"
}

// available reads the accepted words from the first CPU in scope.
func (k *cpufreqKnob) available() ([]string, error) {
	ids, err := k.cpus.list()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k.id, err)
	}
	p := cpuFile(ids[0], "cpufreq/"+k.avail)
	s, err := k.f.ReadString(p)
	if err != nil {
		if notExist(err) {
			return nil, unsupported(k.id, p)
		}
		return nil, fmt.Errorf("%s: %w", k.id, err)
	}
	words := strings.Fields(s)
	for _, w := range words {
		if !isWord(w) {
			return nil, fmt.Errorf("%s: %w", k.id, garbage(p, s, "a list of words"))
		}
	}
	return words, nil
}

// check refuses a word the driver does not offer (numbers are EPP's raw
// values, which the driver does not list).
func (k *cpufreqKnob) check(w string, avail []string) error {
	if _, err := strconv.Atoi(w); err == nil && k.epp {
		return nil
	}
	if !slices.Contains(avail, w) {
		return fmt.Errorf("%s: %q is not an available %s (available: %s)", k.id, w, k.what(), strings.Join(avail, " "))
	}
	return nil
}

// Desired accepts one value for every CPU ("performance") or the per-CPU
// form; each word must be one the driver offers (scaling_available_governors
// or energy_performance_available_preferences of the first CPU in scope).
func (k *cpufreqKnob) Desired(setting string) (Value, error) {
	avail, err := k.available()
	if err != nil {
		return "", err
	}
	if !isPerCPU(Value(setting)) {
		w, err := k.canon(setting, true)
		if err != nil {
			return "", err
		}
		if err := k.check(w, avail); err != nil {
			return "", err
		}
		return Value(w), nil
	}
	vals, err := k.canonAll(Value(strings.TrimSpace(setting)), true)
	if err != nil {
		return "", err
	}
	for _, w := range vals {
		if err := k.check(w, avail); err != nil {
			return "", err
		}
	}
	ids, _ := k.cpus.list()
	return formatPerCPU(ids, vals), nil
}

// canonAll splits v into the CPUs' canonical values.
func (k *cpufreqKnob) canonAll(v Value, strict bool) ([]string, error) {
	vals, err := parsePerCPU(v, k.cpus)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k.id, err)
	}
	done := map[string]string{}
	for i, s := range vals {
		w, ok := done[s]
		if !ok {
			if w, err = k.canon(s, strict); err != nil {
				return nil, err
			}
			done[s] = w
		}
		vals[i] = w
	}
	return vals, nil
}

// Apply writes each CPU whose value differs (one read of every CPU first,
// then one write and read-back per changed CPU) and compares the result.
// A CPU whose file cannot be read or holds no single word (a fixture file
// left empty by a killed run) counts as differing and is written: a
// rollback must put the journaled value back whatever is there now.
//
// CPUs that share a cpufreq policy share the file: a value giving them
// different words cannot hold, and comes back as a mismatch only if the
// last write of the policy is not the one compared; values read from a
// kernel never ask for that.
func (k *cpufreqKnob) Apply(v Value) error {
	want, err := k.canonAll(v, false)
	if err != nil {
		return err
	}
	ids, cur, err := k.readAll(false)
	if err != nil {
		return err
	}
	err = forEach(len(ids), func(i int) error {
		if cur[i] == want[i] {
			return nil
		}
		p := k.path(ids[i])
		got, err := k.f.WriteFile(p, want[i])
		if err != nil {
			return fmt.Errorf("%s: %w", k.id, err)
		}
		if !isWord(got) {
			return fmt.Errorf("%s: %w", k.id, garbage(p, got, "one word"))
		}
		cur[i] = got
		return nil
	})
	if err != nil {
		return err
	}
	have, wantV := formatPerCPU(ids, cur), formatPerCPU(ids, want)
	if have == wantV {
		return nil
	}
	mm := &MismatchError{ID: k.id, Want: wantV, Have: have}
	if k.epp {
		for i := range want {
			if _, err := strconv.Atoi(want[i]); err == nil && cur[i] != want[i] {
				if _, err := strconv.Atoi(cur[i]); err != nil {
					return fmt.Errorf("%w (the driver shows the raw preference %s as %q: set the name instead)", mm, want[i], cur[i])
				}
			}
		}
	}
	return mm
}
