package knob

import (
	"fmt"
	"strconv"
	"strings"
)

// sysctlKnob is an integer sysctl: vm_swappiness, vm_dirty_ratio,
// vm_dirty_background_ratio, vm_zone_reclaim_mode (/proc/sys/vm/<name>) and
// kernel_numa_balancing (/proc/sys/kernel/numa_balancing). Its Value is the
// integer in decimal. It is unsupported when the file is absent
// (numa_balancing on a kernel without NUMA balancing).
//
// The dirty ratios have a byte twin (vm.dirty_bytes,
// vm.dirty_background_bytes): writing one zeroes the other, and the ratio
// reads 0 while the bytes are in force. Restoring a node that used bytes by
// writing its ratio back (0) would leave both at 0, a dirty limit of zero
// pages. So their Value is "bytes:<N>" when the ratio reads 0 and the bytes
// file holds N > 0, and Apply("bytes:<N>") writes the bytes file.
type sysctlKnob struct {
	id     ID
	f      files
	path   string
	lo, hi int
	bytes  string // the byte twin of a dirty ratio; "" for none
}

// sysctls are the integer sysctl knobs: name, file, allowed range, byte
// twin.
var sysctls = []struct {
	name, path string
	lo, hi     int
	bytes      string
}{
	{"vm_swappiness", "/proc/sys/vm/swappiness", 0, 200, ""},
	{"vm_dirty_ratio", "/proc/sys/vm/dirty_ratio", 0, 100, "/proc/sys/vm/dirty_bytes"},
	{"vm_dirty_background_ratio", "/proc/sys/vm/dirty_background_ratio", 0, 100, "/proc/sys/vm/dirty_background_bytes"},
	{"vm_zone_reclaim_mode", "/proc/sys/vm/zone_reclaim_mode", 0, 7, ""},
	{"kernel_numa_balancing", "/proc/sys/kernel/numa_balancing", 0, 3, ""},
}

func init() {
	for i, s := range sysctls {
		doc := fmt.Sprintf("sysctl: reads and writes %s; an integer %d..%d", s.path, s.lo, s.hi)
		if s.bytes != "" {
			doc += fmt.Sprintf(" (its Value is bytes:<N> while %s is in force)", s.bytes)
		}
		writes := []string{strings.TrimPrefix(s.path, "/")}
		if s.bytes != "" {
			writes = append(writes, strings.TrimPrefix(s.bytes, "/"))
		}
		Register(Def{
			Name: s.name, Kind: NodeKind, Order: 60 + 10*i, Doc: doc, Example: strconv.Itoa(s.hi),
			Decode: decodeInt(s.lo, s.hi),
			Writes: writes,
			New:    func(r *Run, _ ID) Knob { return newSysctl(r.f, s.name) },
		})
	}
}

func newSysctl(f files, name string) *sysctlKnob {
	for _, s := range sysctls {
		if s.name == name {
			return &sysctlKnob{id: ID{Name: name, Scope: NodeScope}, f: f, path: s.path, lo: s.lo, hi: s.hi, bytes: s.bytes}
		}
	}
	panic("knob: no sysctl " + name)
}

func (k *sysctlKnob) ID() ID { return k.id }

// readInt reads one integer file; absent is unsupported.
func (k *sysctlKnob) readInt(p string) (int64, error) {
	s, err := k.f.ReadString(p)
	if err != nil {
		if notExist(err) {
			return 0, unsupported(k.id, p)
		}
		return 0, fmt.Errorf("%s: %w", k.id, err)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", k.id, garbage(p, s, "an integer"))
	}
	return n, nil
}

func (k *sysctlKnob) Read() (Value, error) {
	n, err := k.readInt(k.path)
	if err != nil {
		return "", err
	}
	if n == 0 && k.bytes != "" {
		b, err := k.readInt(k.bytes)
		if err == nil && b > 0 {
			return Value("bytes:" + strconv.FormatInt(b, 10)), nil
		}
	}
	return Value(strconv.FormatInt(n, 10)), nil
}

// parse checks a setting: an integer in range, or bytes:<N> for a dirty
// ratio. It returns the canonical value, the file to write and what.
func (k *sysctlKnob) parse(setting string) (Value, string, string, error) {
	s := strings.TrimSpace(setting)
	if b, ok := strings.CutPrefix(s, "bytes:"); ok && k.bytes != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n <= 0 {
			return "", "", "", fmt.Errorf("%s: %q: bytes:<N> needs a byte count above 0", k.id, clip(setting))
		}
		w := strconv.FormatInt(n, 10)
		return Value("bytes:" + w), k.bytes, w, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return "", "", "", fmt.Errorf("%s: %q is not an integer", k.id, clip(setting))
	}
	if n < k.lo || n > k.hi {
		return "", "", "", fmt.Errorf("%s: %d is out of range (%d..%d)", k.id, n, k.lo, k.hi)
	}
	w := strconv.Itoa(n)
	return Value(w), k.path, w, nil
}

// Desired accepts an integer in the knob's range (swappiness 0..200,
// ratios 0..100, zone_reclaim_mode 0..7, numa_balancing 0..3), or
// bytes:<N> for a dirty ratio.
func (k *sysctlKnob) Desired(setting string) (Value, error) {
	v, _, _, err := k.parse(setting)
	if err != nil {
		return "", err
	}
	if _, err := k.readInt(k.path); err != nil {
		return "", err
	}
	return v, nil
}

// Apply writes the value and reads it back (for a dirty ratio, both files).
func (k *sysctlKnob) Apply(v Value) error {
	want, p, w, err := k.parse(string(v))
	if err != nil {
		return err
	}
	got, err := k.f.WriteFile(p, w)
	if err != nil {
		if notExist(err) {
			return unsupported(k.id, p)
		}
		return fmt.Errorf("%s: %w", k.id, err)
	}
	var have Value
	if k.bytes == "" {
		n, err := strconv.ParseInt(got, 10, 64)
		if err != nil {
			return fmt.Errorf("%s: %w", k.id, garbage(p, got, "an integer"))
		}
		have = Value(strconv.FormatInt(n, 10))
	} else if have, err = k.Read(); err != nil {
		return err
	}
	if have != want {
		return &MismatchError{ID: k.id, Want: want, Have: have}
	}
	return nil
}
