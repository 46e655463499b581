package knob

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// cstateKnob is cstate_max_latency_us: the CPU idle states a job may enter.
// Its Value is the set of disabled idle states of each CPU,
// "state2,state3" ("" when none is disabled), read from
// /sys/devices/system/cpu/cpu<N>/cpuidle/state<K>/disable, in the per-CPU
// scheme (percpu.go) when CPUs differ. Desired turns the profile's latency
// limit into the states whose exit latency (cpuidle/state<K>/latency, in
// µs) exceeds it; Apply writes 1 to the disable file of those and 0 to the
// others.
//
// Why not /dev/cpu_dma_latency: a PM QoS request made through it lasts only
// while the file is held open, and the prolog exits before the job starts;
// a helper process holding it would have to outlive the prolog and be
// tracked per job. The disable files persist, read back, and can be
// restored exactly. (Per-CPU power/pm_qos_resume_latency_us would also
// persist, but only some cpuidle governors honour it, and it cannot be read
// as "which states are off".)
//
// The idle states of the first CPU in scope are taken to be every CPU's
// (true of intel_idle, acpi_idle on servers and Grace's PSCI states); a CPU
// lacking one of them is an error naming the file. It is unsupported when
// the first CPU has no cpuidle states (VMs).
type cstateKnob struct {
	id   ID
	f    files
	cpus *cpuScope
}

// maxCStateUS bounds cstate_max_latency_us in the configuration.
const maxCStateUS = 1000000

func init() {
	Register(Def{
		Name: "cstate_max_latency_us", Kind: NodeKind, Order: 30,
		Example: `10`,
		Doc: "disables the idle states whose exit latency exceeds the limit on every CPU in scope " +
			"(reads cpu<N>/cpuidle/state<K>/latency, reads and writes .../disable); µs 0..1000000, -1 = leave alone",
		Decode: func(raw any) (string, error) {
			n, err := decodeIntRaw(raw)
			if err != nil {
				return "", err
			}
			if n != -1 && (n < 0 || n > maxCStateUS) {
				return "", fmt.Errorf("must be 0..%d", maxCStateUS)
			}
			return strconv.FormatInt(n, 10), nil
		},
		LeaveAlone: "-1",
		Writes:     []string{"sys/devices/system/cpu/cpu<N>/cpuidle/state<N>/disable"},
		New:        func(r *Run, _ ID) Knob { return newCState(r.f, r.cpus) },
	})
}

func newCState(f files, cpus *cpuScope) *cstateKnob {
	return &cstateKnob{id: ID{Name: "cstate_max_latency_us", Scope: NodeScope}, f: f, cpus: cpus}
}

func (k *cstateKnob) ID() ID { return k.id }

// states lists the idle states of the first CPU in scope ("state0",
// "state1", ...), in numeric order.
func (k *cstateKnob) states() ([]int, []string, error) {
	ids, err := k.cpus.list()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", k.id, err)
	}
	dir := cpuFile(ids[0], "cpuidle")
	names, err := k.f.ReadDir(dir)
	if err != nil {
		if notExist(err) {
			return nil, nil, unsupported(k.id, dir)
		}
		return nil, nil, fmt.Errorf("%s: %w", k.id, err)
	}
	var nums []int
	for _, n := range names {
		if i, ok := stateNum(n); ok {
			nums = append(nums, i)
		}
	}
	if len(nums) == 0 {
		return nil, nil, fmt.Errorf("%s: %s holds no idle state: %w", k.id, dir, ErrUnsupported)
	}
	sort.Ints(nums)
	states := make([]string, len(nums))
	for i, n := range nums {
		states[i] = "state" + strconv.Itoa(n)
	}
	return ids, states, nil
}

// stateNum is K of "state<K>".
func stateNum(name string) (int, bool) {
	s, ok := strings.CutPrefix(name, "state")
	if !ok || s == "" || len(s) > 4 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

func (k *cstateKnob) disablePath(cpu int, state string) string {
	return cpuFile(cpu, "cpuidle/"+state+"/disable")
}

// readAll reads every CPU's disable files once: off[i*len(states)+j] says
// whether state j of CPU ids[i] is disabled. Strict, an unreadable file or
// one holding neither 0 nor 1 is an error; loose (for Apply), bad marks
// such a file, which Apply then writes whatever it holds.
func (k *cstateKnob) readAll(strict bool) (ids []int, states []string, off, bad []bool, err error) {
	ids, states, err = k.states()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	off = make([]bool, len(ids)*len(states))
	bad = make([]bool, len(off))
	err = forEach(len(ids), func(i int) error {
		for j, st := range states {
			x := i*len(states) + j
			p := k.disablePath(ids[i], st)
			s, err := k.f.ReadString(p)
			if err != nil {
				if strict {
					return fmt.Errorf("%s: %w", k.id, err)
				}
				bad[x] = true
				continue
			}
			b, ok := parseFlag(s)
			if !ok {
				if strict {
					return fmt.Errorf("%s: %w", k.id, garbage(p, s, "0 or 1"))
				}
				bad[x] = true
				continue
			}
			off[x] = b
		}
		return nil
	})
	if err != nil {
		return nil, nil, nil, nil, err
	}
	return ids, states, off, bad, nil
}

// parseFlag reads a disable file: "0" or "1".
func parseFlag(s string) (bool, bool) {
	switch s {
	case "0":
		return false, true
	case "1":
		return true, true
	}
	return false, false
}

// formatOff is the Value of the disabled states.
func formatOff(ids []int, states []string, off []bool) Value {
	vals := make([]string, len(ids))
	var sb strings.Builder
	for i := range ids {
		sb.Reset()
		for j, st := range states {
			if off[i*len(states)+j] {
				if sb.Len() > 0 {
					sb.WriteByte(',')
				}
				sb.WriteString(st)
			}
		}
		vals[i] = sb.String()
	}
	return formatPerCPU(ids, vals)
}

func (k *cstateKnob) Read() (Value, error) {
	ids, states, off, _, err := k.readAll(true)
	if err != nil {
		return "", err
	}
	return formatOff(ids, states, off), nil
}

// Desired turns a latency limit in µs into the states to disable: those
// whose exit latency (of the first CPU in scope) exceeds it. -1 means
// "leave alone": the error wraps ErrLeaveAlone.
func (k *cstateKnob) Desired(setting string) (Value, error) {
	s := strings.TrimSpace(setting)
	limit, err := strconv.Atoi(s)
	if err != nil {
		return "", fmt.Errorf("%s: %q is not a latency in µs (an integer, -1 to leave alone)", k.id, clip(setting))
	}
	if limit == -1 {
		return "", fmt.Errorf("%s: %d: %w", k.id, limit, ErrLeaveAlone)
	}
	if limit < 0 {
		return "", fmt.Errorf("%s: %d: a latency limit must be 0 or more µs (-1 to leave alone)", k.id, limit)
	}
	ids, states, err := k.states()
	if err != nil {
		return "", err
	}
	var off []string
	for _, st := range states {
		p := cpuFile(ids[0], "cpuidle/"+st+"/latency")
		s, err := k.f.ReadString(p)
		if err != nil {
			return "", fmt.Errorf("%s: %w", k.id, err)
		}
		lat, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return "", fmt.Errorf("%s: %w", k.id, garbage(p, s, "a latency in µs"))
		}
		if lat > uint64(limit) {
			off = append(off, st)
		}
	}
	return Value(strings.Join(off, ",")), nil
}

// parseOff turns one CPU's value ("state2,state3", "") into flags over
// states, refusing a state the CPU does not have.
func (k *cstateKnob) parseOff(v string, states []string, into []bool) error {
	if v == "" {
		return nil
	}
	for _, name := range strings.Split(v, ",") {
		j := -1
		for x, st := range states {
			if st == name {
				j = x
				break
			}
		}
		if j < 0 {
			return fmt.Errorf("%s: no idle state %q (states: %s)", k.id, clip(name), strings.Join(states, ","))
		}
		into[j] = true
	}
	return nil
}

// Apply writes 1 to the disable file of each listed state and 0 to the
// others, skipping files already right (one read of every file first), and
// compares the result. A file that cannot be read or holds neither 0 nor 1
// (a fixture file left empty by a killed run) is written anyway: a
// rollback must put the journaled value back whatever is there now. The
// idle states are still those listed on the first CPU.
func (k *cstateKnob) Apply(v Value) error {
	ids, states, cur, bad, err := k.readAll(false)
	if err != nil {
		return err
	}
	vals, err := parsePerCPU(v, k.cpus)
	if err != nil {
		return fmt.Errorf("%s: %w", k.id, err)
	}
	want := make([]bool, len(cur))
	for i := range ids {
		if err := k.parseOff(vals[i], states, want[i*len(states):(i+1)*len(states)]); err != nil {
			return err
		}
	}
	err = forEach(len(ids), func(i int) error {
		for j, st := range states {
			x := i*len(states) + j
			if cur[x] == want[x] && !bad[x] {
				continue
			}
			p, w := k.disablePath(ids[i], st), "0"
			if want[x] {
				w = "1"
			}
			got, err := k.f.WriteFile(p, w)
			if err != nil {
				return fmt.Errorf("%s: %w", k.id, err)
			}
			b, ok := parseFlag(got)
			if !ok {
				return fmt.Errorf("%s: %w", k.id, garbage(p, got, "0 or 1"))
			}
			cur[x] = b
		}
		return nil
	})
	if err != nil {
		return err
	}
	have, wantV := formatOff(ids, states, cur), formatOff(ids, states, want)
	if have != wantV {
		return &MismatchError{ID: k.id, Want: wantV, Have: have}
	}
	return nil
}
