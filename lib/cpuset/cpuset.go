// Package cpuset is the Linux CPU-list type: the "0-3,8-11" of
// /sys/devices/system/cpu/online, cpuset.cpus and numactl. A Set is immutable:
// every operation returns a new Set.
package cpuset

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// MaxCPU bounds CPU ids accepted by Parse, so a garbage list such as
// "0-4000000000" cannot allocate gigabytes. Linux's NR_CPUS tops out at 8192.
const MaxCPU = 1<<16 - 1

// Set is an immutable set of CPU ids (non-negative integers).
type Set struct {
	words []uint64 // bit i of words[i/64]; no trailing zero words
}

// New returns the set of the given CPU ids.
func New(cpus ...int) Set {
	var b builder
	for _, c := range cpus {
		b.add(c)
	}
	return b.set()
}

// Range returns the set lo..hi inclusive (empty if hi < lo).
func Range(lo, hi int) Set {
	var b builder
	for c := lo; c <= hi; c++ {
		b.add(c)
	}
	return b.set()
}

type builder struct{ words []uint64 }

func (b *builder) add(c int) {
	if c < 0 {
		return
	}
	w := c / 64
	for len(b.words) <= w {
		b.words = append(b.words, 0)
	}
	b.words[w] |= 1 << uint(c%64)
}

func (b *builder) set() Set { return Set{words: trim(b.words)} }

func trim(w []uint64) []uint64 {
	n := len(w)
	for n > 0 && w[n-1] == 0 {
		n--
	}
	if n == 0 {
		return nil
	}
	return w[:n]
}

// Parse reads a CPU list: comma-separated ids and ranges ("0-3,8-11"), with
// surrounding white space, an optional trailing newline and NUL bytes (some
// arm64 kernels end list files in "\n\x00"). The empty string
// is the empty set. Ranges must be ascending and ids at most MaxCPU.
func Parse(s string) (Set, error) {
	s = strings.Trim(s, " \t\r\n\x00")
	var b builder
	if s == "" {
		return Set{}, nil
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := parseID(lo)
		if err != nil {
			return Set{}, fmt.Errorf("cpu list %q: %w", clip(s), err)
		}
		z := a
		if isRange {
			if z, err = parseID(hi); err != nil {
				return Set{}, fmt.Errorf("cpu list %q: %w", clip(s), err)
			}
			if z < a {
				return Set{}, fmt.Errorf("cpu list %q: range %q is descending", clip(s), part)
			}
		}
		for c := a; c <= z; c++ {
			b.add(c)
		}
	}
	return b.set(), nil
}

func parseID(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("missing cpu id")
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, fmt.Errorf("%q is not a cpu id", s)
		}
	}
	v, err := strconv.Atoi(s)
	if err != nil || v > MaxCPU {
		return 0, fmt.Errorf("cpu id %q is out of range (max %d)", s, MaxCPU)
	}
	return v, nil
}

// MustParse is Parse for constants in tests and tables; it panics on error.
func MustParse(s string) Set {
	c, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return c
}

// ParseMask reads a kernel CPU mask ("ff,ffffffff,00000000" as in
// /sys/devices/system/node/node0/cpumap): comma-separated 32-bit hex words,
// most significant first; surrounding white space and NUL bytes are ignored.
func ParseMask(s string) (Set, error) {
	s = strings.Trim(s, " \t\r\n\x00")
	if s == "" {
		return Set{}, nil
	}
	parts := strings.Split(s, ",")
	var b builder
	for i := range parts {
		word := strings.TrimSpace(parts[len(parts)-1-i])
		v, err := strconv.ParseUint(word, 16, 32)
		if err != nil {
			return Set{}, fmt.Errorf("cpu mask %q: bad word %q", clip(s), word)
		}
		for bit := 0; bit < 32; bit++ {
			if v&(1<<uint(bit)) != 0 {
				b.add(i*32 + bit)
			}
		}
	}
	return b.set(), nil
}

// Mask formats the set as a kernel CPU mask of at least nbits bits, the way
// the kernel prints cpumap files: 32-bit hex groups, most significant first,
// comma-separated, the first group only as wide as the bits above the last
// full group ("ff,ffffffff" for 40 bits).
func (s Set) Mask(nbits int) string {
	if m := s.Max() + 1; m > nbits {
		nbits = m
	}
	if nbits <= 0 {
		nbits = 1
	}
	nwords := (nbits + 31) / 32
	var b strings.Builder
	for i := nwords - 1; i >= 0; i-- {
		var v uint64
		if i/2 < len(s.words) {
			v = s.words[i/2] >> (32 * uint(i%2)) & 0xffffffff
		}
		width := 8
		if i == nwords-1 && nbits%32 != 0 {
			width = (nbits%32 + 3) / 4
		}
		if i != nwords-1 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%0*x", width, v)
	}
	return b.String()
}

// String formats the set canonically, as the kernel writes cpulist files:
// ascending, every run of consecutive ids as a range ("0-3,5-6,8-11").
func (s Set) String() string {
	var small [64]byte
	return string(s.AppendTo(small[:0]))
}

// AppendTo appends the set's CPU list (String's text) to b: a run of
// consecutive ids is found a word at a time, with no list of ids on the
// way (a large node formats thousands of sets in one run).
func (s Set) AppendTo(b []byte) []byte {
	first := true
	for lo := s.next(0); lo >= 0; {
		hi := s.runEnd(lo)
		if !first {
			b = append(b, ',')
		}
		first = false
		b = strconv.AppendInt(b, int64(lo), 10)
		if hi > lo {
			b = append(b, '-')
			b = strconv.AppendInt(b, int64(hi), 10)
		}
		lo = s.next(hi + 1)
	}
	return b
}

// next is the lowest id in the set at or above c, or -1.
func (s Set) next(c int) int {
	for w := c / 64; w < len(s.words); w++ {
		word := s.words[w]
		if w == c/64 {
			word &^= 1<<uint(c%64) - 1
		}
		if word != 0 {
			return w*64 + bits.TrailingZeros64(word)
		}
	}
	return -1
}

// runEnd is the highest id of the run of consecutive ids in the set that
// starts at lo (which the set holds).
func (s Set) runEnd(lo int) int {
	for w := lo / 64; w < len(s.words); w++ {
		word := ^s.words[w] // the ids not in the set
		if w == lo/64 {
			word &^= 1<<uint(lo%64) - 1
		}
		if word != 0 {
			return w*64 + bits.TrailingZeros64(word) - 1
		}
	}
	return len(s.words)*64 - 1
}

// List returns the ids in ascending order.
func (s Set) List() []int {
	out := make([]int, 0, s.Size())
	for w, word := range s.words {
		for word != 0 {
			t := bits.TrailingZeros64(word)
			out = append(out, w*64+t)
			word &^= 1 << uint(t)
		}
	}
	return out
}

// Size is the number of CPUs in the set.
func (s Set) Size() int {
	n := 0
	for _, w := range s.words {
		n += bits.OnesCount64(w)
	}
	return n
}

// IsEmpty says whether the set has no CPUs.
func (s Set) IsEmpty() bool { return len(s.words) == 0 }

// Contains says whether cpu is in the set.
func (s Set) Contains(cpu int) bool {
	if cpu < 0 || cpu/64 >= len(s.words) {
		return false
	}
	return s.words[cpu/64]&(1<<uint(cpu%64)) != 0
}

// Min is the smallest id, or -1 for the empty set.
func (s Set) Min() int {
	for w, word := range s.words {
		if word != 0 {
			return w*64 + bits.TrailingZeros64(word)
		}
	}
	return -1
}

// Max is the largest id, or -1 for the empty set.
func (s Set) Max() int {
	if len(s.words) == 0 {
		return -1
	}
	w := len(s.words) - 1
	return w*64 + 63 - bits.LeadingZeros64(s.words[w])
}

// Equal says whether both sets hold the same CPUs.
func (s Set) Equal(o Set) bool {
	if len(s.words) != len(o.words) {
		return false
	}
	for i := range s.words {
		if s.words[i] != o.words[i] {
			return false
		}
	}
	return true
}

// Union is s ∪ o.
func (s Set) Union(o Set) Set {
	a, b := s.words, o.words
	if len(a) < len(b) {
		a, b = b, a
	}
	out := make([]uint64, len(a))
	copy(out, a)
	for i := range b {
		out[i] |= b[i]
	}
	return Set{words: trim(out)}
}

// Intersection is s ∩ o.
func (s Set) Intersection(o Set) Set {
	n := min(len(s.words), len(o.words))
	out := make([]uint64, n)
	for i := 0; i < n; i++ {
		out[i] = s.words[i] & o.words[i]
	}
	return Set{words: trim(out)}
}

// Difference is s \ o.
func (s Set) Difference(o Set) Set {
	out := make([]uint64, len(s.words))
	copy(out, s.words)
	for i := 0; i < len(out) && i < len(o.words); i++ {
		out[i] &^= o.words[i]
	}
	return Set{words: trim(out)}
}

// IsSubsetOf says whether every CPU of s is in o.
func (s Set) IsSubsetOf(o Set) bool { return s.Difference(o).IsEmpty() }

// MarshalText writes the canonical list, so a Set is a JSON/TOML string.
func (s Set) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText parses a CPU list.
func (s *Set) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// clip is s cut to 40 bytes with "..." after a cut, for a message. It is
// lib/textfmt's Clip(s, 40), kept here so that cpuset, a leaf package, imports
// no more of gpuprep.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
