package slurm

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"gpuprep/lib/textfmt"
)

// MaxHostlistNames bounds what one hostlist expression may expand to, so a
// value such as "n[0-99999]x[0-99999]" cannot allocate gigabytes. Slurm caps
// each range, and each prefix expansion, at 65536 names.
const MaxHostlistNames = 1 << 16

// maxRangeDigits bounds the digits of one number in a range (fits uint64).
const maxRangeDigits = 18

// Hostlist is a parsed Slurm hostlist expression: "gpu[01-04,07],login1",
// "rack[1-2]n[01-08]", "/dev/nvidia[0,2-3]". It is used for gres.conf
// NodeName= and File=/MultipleFiles= values and for SLURM_NODELIST.
type Hostlist struct {
	terms []hostTerm
}

// hostTerm is one comma-separated element: literals and bracketed range
// lists alternating, e.g. "rack" [1-2] "n" [01-08].
type hostTerm []hostPart

type hostPart struct {
	lit    string     // when ranges is nil
	ranges []numRange // a bracket group
}

type numRange struct {
	lo, hi uint64
	width  int // digits of lo as written: "01-10" pads to 2
}

// ParseHostlist reads a hostlist expression with Slurm 22.05's rules:
//   - elements are separated by commas, spaces or tabs outside brackets;
//     empty elements are skipped;
//   - "[a-b,c]" is a bracket group of decimal numbers and ascending ranges;
//     the width of the low end as written gives the zero padding
//     ("[01-10]" yields 01..10, "[1-10]" yields 1..10);
//   - several bracket groups in one element multiply ("r[1-2]n[1-2]");
//   - text after the last ']' is an error, as in Slurm 22.05 (later Slurm
//     allows a suffix);
//   - at most 65536 names per range and per expression.
//
// Unlike Slurm, an unterminated '[' is an error (Slurm silently appends ']').
func ParseHostlist(s string) (Hostlist, error) {
	var h Hostlist
	total := 0
	i := 0
	for i < len(s) {
		for i < len(s) && isListSep(s[i]) {
			i++
		}
		if i >= len(s) {
			break
		}
		var term hostTerm
		var lit strings.Builder
		for i < len(s) && !isListSep(s[i]) {
			switch c := s[i]; c {
			case '[':
				j := strings.IndexByte(s[i+1:], ']')
				if j < 0 {
					return Hostlist{}, fmt.Errorf("unterminated '[' in %s", Quote(s))
				}
				body := s[i+1 : i+1+j]
				if strings.IndexByte(body, '[') >= 0 {
					return Hostlist{}, fmt.Errorf("nested '[' in %s", Quote(s))
				}
				rs, err := parseRangeList(body)
				if err != nil {
					return Hostlist{}, err
				}
				if lit.Len() > 0 {
					term = append(term, hostPart{lit: lit.String()})
					lit.Reset()
				}
				term = append(term, hostPart{ranges: rs})
				i += j + 2
			case ']':
				return Hostlist{}, fmt.Errorf("unmatched ']' in %s", Quote(s))
			default:
				lit.WriteByte(c)
				i++
			}
		}
		if lit.Len() > 0 {
			if len(term) > 0 {
				return Hostlist{}, fmt.Errorf("text %s after ']' in %s (Slurm 22.05 allows none)", Quote(lit.String()), Quote(s))
			}
			term = append(term, hostPart{lit: lit.String()})
		}
		h.terms = append(h.terms, term)
		if total += termLen(term); total > MaxHostlistNames {
			return Hostlist{}, fmt.Errorf("%s names more than %d hosts", Quote(s), MaxHostlistNames)
		}
	}
	return h, nil
}

func isListSep(c byte) bool { return c == ',' || c == ' ' || c == '\t' }

// parseRangeList reads the inside of a bracket group: "01-04,07".
func parseRangeList(body string) ([]numRange, error) {
	if body == "" {
		return nil, errors.New("empty '[]'")
	}
	var out []numRange
	var total uint64
	for _, el := range strings.Split(body, ",") {
		lo, hi, isRange := strings.Cut(el, "-")
		a, err := parseRangeNum(lo, el)
		if err != nil {
			return nil, err
		}
		z := a
		if isRange {
			if z, err = parseRangeNum(hi, el); err != nil {
				return nil, err
			}
			if z < a {
				return nil, fmt.Errorf("range %s is descending", Quote(el))
			}
		}
		n := z - a + 1
		if n > MaxHostlistNames {
			return nil, fmt.Errorf("range %s names more than %d hosts", Quote(el), MaxHostlistNames)
		}
		total += n
		if total > MaxHostlistNames {
			return nil, fmt.Errorf("[%s] names more than %d hosts", textfmt.Clip(body, 40), MaxHostlistNames)
		}
		out = append(out, numRange{lo: a, hi: z, width: len(lo)})
	}
	return out, nil
}

func parseRangeNum(s, el string) (uint64, error) {
	if s == "" {
		return 0, fmt.Errorf("range %s: missing number", Quote(el))
	}
	if len(s) > maxRangeDigits {
		return 0, fmt.Errorf("range %s: number too long", Quote(el))
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("range %s: %s is not a number", Quote(el), Quote(s))
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("range %s: %s is not a number", Quote(el), Quote(s))
	}
	return v, nil
}

// Len is the number of names the expression expands to (duplicates
// counted), saturating at MaxHostlistNames+1.
func (h Hostlist) Len() int {
	total := 0
	for _, t := range h.terms {
		if total += termLen(t); total > MaxHostlistNames {
			return MaxHostlistNames + 1
		}
	}
	return total
}

// termLen counts one element's names, saturating at MaxHostlistNames+1.
func termLen(t hostTerm) int {
	n := uint64(1)
	for _, p := range t {
		if p.ranges == nil {
			continue
		}
		var c uint64
		for _, r := range p.ranges {
			c += r.hi - r.lo + 1
		}
		if n *= c; n > MaxHostlistNames {
			return MaxHostlistNames + 1
		}
	}
	return int(n)
}

// Expand lists every name in order: elements left to right; within an
// element the leftmost bracket group varies slowest, as Slurm expands them.
func (h Hostlist) Expand() []string {
	out := make([]string, 0, h.Len())
	for _, t := range h.terms {
		out = expandTerm(out, t, "")
	}
	return out
}

func expandTerm(out []string, t hostTerm, prefix string) []string {
	if len(t) == 0 {
		return append(out, prefix)
	}
	p := t[0]
	if p.ranges == nil {
		return expandTerm(out, t[1:], prefix+p.lit)
	}
	for _, r := range p.ranges {
		for v := r.lo; ; v++ {
			out = expandTerm(out, t[1:], prefix+padNum(v, r.width))
			if v == r.hi {
				break
			}
		}
	}
	return out
}

func padNum(v uint64, width int) string {
	s := strconv.FormatUint(v, 10)
	if len(s) < width {
		s = strings.Repeat("0", width-len(s)) + s
	}
	return s
}

// Contains says whether name is one of the expression's names, without
// expanding it. As in Slurm, names compare case-sensitively and a number
// must carry the range's zero padding ("gpu1" is not in "gpu[01-04]").
func (h Hostlist) Contains(name string) bool {
	for _, t := range h.terms {
		m := matcher{t: t, s: name}
		if m.match(0, 0) {
			return true
		}
	}
	return false
}

// matcher matches one term against a name; failed (part, position) pairs are
// memoised so adjacent bracket groups cannot make it exponential.
type matcher struct {
	t      hostTerm
	s      string
	failed map[[2]int]bool
}

func (m *matcher) match(pi, pos int) bool {
	if pi == len(m.t) {
		return pos == len(m.s)
	}
	key := [2]int{pi, pos}
	if m.failed[key] {
		return false
	}
	p := m.t[pi]
	if p.ranges == nil {
		if strings.HasPrefix(m.s[pos:], p.lit) && m.match(pi+1, pos+len(p.lit)) {
			return true
		}
	} else {
		for end := pos + 1; end <= len(m.s) && end-pos <= maxRangeDigits+1; end++ {
			c := m.s[end-1]
			if c < '0' || c > '9' {
				break
			}
			if inRanges(p.ranges, m.s[pos:end]) && m.match(pi+1, end) {
				return true
			}
		}
	}
	if m.failed == nil {
		m.failed = map[[2]int]bool{}
	}
	m.failed[key] = true
	return false
}

func inRanges(rs []numRange, digits string) bool {
	v, err := strconv.ParseUint(digits, 10, 64)
	if err != nil {
		return false
	}
	for _, r := range rs {
		if v >= r.lo && v <= r.hi && padNum(v, r.width) == digits {
			return true
		}
	}
	return false
}

// ExpandHostlist expands a hostlist expression, keeping zero padding:
// "gpu[01-03,07],login1" gives gpu01 gpu02 gpu03 gpu07 login1.
func ExpandHostlist(s string) ([]string, error) {
	h, err := ParseHostlist(s)
	if err != nil {
		return nil, err
	}
	return h.Expand(), nil
}

// CompactHostlist writes node names as one hostlist expression, the way
// Slurm does, ExpandHostlist's inverse: "gpu[01-04,07],login1". Names are
// grouped by the text before their trailing number and by that number's
// width, so "gpu01" and "gpu1" never merge; a number of more than
// maxRangeDigits digits is not one. An empty name is "?".
func CompactHostlist(names []string) string {
	type key struct {
		prefix string
		width  int
	}
	groups := map[key][]uint64{}
	var plain []string
	seen := map[string]bool{}
	for _, n := range names {
		if n == "" {
			n = "?"
		}
		if seen[n] {
			continue
		}
		seen[n] = true
		i := len(n)
		for i > 0 && n[i-1] >= '0' && n[i-1] <= '9' {
			i--
		}
		num, err := strconv.ParseUint(n[i:], 10, 64)
		if i == len(n) || len(n)-i > maxRangeDigits || err != nil {
			plain = append(plain, n)
			continue
		}
		k := key{n[:i], len(n) - i}
		groups[k] = append(groups[k], num)
	}
	keys := make([]key, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		if keys[a].prefix != keys[b].prefix {
			return keys[a].prefix < keys[b].prefix
		}
		return keys[a].width < keys[b].width
	})
	var out []string
	for _, k := range keys {
		nums := groups[k]
		sort.Slice(nums, func(a, b int) bool { return nums[a] < nums[b] })
		if len(nums) == 1 {
			out = append(out, fmt.Sprintf("%s%0*d", k.prefix, k.width, nums[0]))
			continue
		}
		var ranges []string
		for i := 0; i < len(nums); {
			j := i
			for j+1 < len(nums) && nums[j+1] == nums[j]+1 {
				j++
			}
			r := fmt.Sprintf("%0*d", k.width, nums[i])
			if j > i {
				r += fmt.Sprintf("-%0*d", k.width, nums[j])
			}
			ranges = append(ranges, r)
			i = j + 1
		}
		out = append(out, k.prefix+"["+strings.Join(ranges, ",")+"]")
	}
	sort.Strings(plain)
	return strings.Join(append(out, plain...), ",")
}
