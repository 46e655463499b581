package irq

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/textfmt"
)

// Placed is one IRQ gpuprep moved, as PlacedPath keeps it: where it was
// before (From, what a restore writes back), where gpuprep put it (To),
// and whether the kernel refused the move (Refused: a managed IRQ on a
// kernel that shows its smp_affinity_list writable; counted, never drift).
type Placed struct {
	IRQ      int
	From, To cpuset.Set
	Refused  bool
}

// FormatPlaced is the text of PlacedPath: a comment, then one line per
// IRQ, ascending, "<irq> <from> <to>" and " refused" where the kernel
// refused. The IRQ number comes first so that the policy script, which
// reads the first word of each line, bans exactly these IRQs.
func FormatPlaced(ps []Placed) string {
	s := slices.Clone(ps)
	slices.SortFunc(s, func(a, b Placed) int { return a.IRQ - b.IRQ })
	b := make([]byte, 0, 64+24*len(s))
	b = append(b, "# IRQs placed by gpuprep: irq, affinity before, affinity set\n"...)
	for i, p := range s {
		if i > 0 && s[i-1].IRQ == p.IRQ {
			continue
		}
		b = strconv.AppendInt(b, int64(p.IRQ), 10)
		b = p.From.AppendTo(append(b, ' '))
		b = p.To.AppendTo(append(b, ' '))
		if p.Refused {
			b = append(b, " refused"...)
		}
		b = append(b, '\n')
	}
	return string(b)
}

// Basis is what a placement was computed for: the node's online CPUs and
// the housekeeping CPUs among them (none: devices' IRQs only). While the
// node's IRQs and devices stay as they are, a placement computed again for
// the same basis is the same: irq_affinity reads a held placement's list
// rather than computing it again for every job that shares it.
type Basis struct {
	Online, Housekeeping cpuset.Set
}

// basisPrefix starts the comment line that keeps a list's Basis.
const basisPrefix = "# computed for online CPUs "

func (b Basis) line() string {
	hk := b.Housekeeping.String()
	if hk == "" {
		hk = "none"
	}
	return basisPrefix + b.Online.String() + ", housekeeping CPUs " + hk + "\n"
}

// FormatPlacedFor is FormatPlaced with the placement's Basis, where
// given, kept in a comment line after the first.
func FormatPlacedFor(ps []Placed, b *Basis) string {
	text := FormatPlaced(ps)
	if b == nil {
		return text
	}
	head, rest, _ := strings.Cut(text, "\n")
	return head + "\n" + b.line() + rest
}

// ParseBasis reads the Basis FormatPlacedFor kept in a list; ok is false
// when the list keeps none (written by FormatPlaced, or by gpuprep before
// 0.2) or it does not parse.
func ParseBasis(b []byte) (basis Basis, ok bool) {
	for line := range strings.SplitSeq(string(b), "\n") {
		rest, found := strings.CutPrefix(line, basisPrefix)
		if !found {
			continue
		}
		online, hk, two := strings.Cut(rest, ", housekeeping CPUs ")
		if hk == "none" {
			hk = ""
		}
		var err1, err2 error
		basis.Online, err1 = cpuset.Parse(online)
		basis.Housekeeping, err2 = cpuset.Parse(hk)
		return basis, two && err1 == nil && err2 == nil && !basis.Online.IsEmpty()
	}
	return Basis{}, false
}

// Equal says whether two bases are the same.
func (b Basis) Equal(o Basis) bool {
	return b.Online.Equal(o.Online) && b.Housekeeping.Equal(o.Housekeeping)
}

// ParsePlaced reads FormatPlaced's text back; blank lines and lines that
// start with # are skipped. path names the file in errors, with the line.
func ParsePlaced(path string, b []byte) ([]Placed, error) {
	type entry struct {
		Placed
		line int
	}
	es := make([]entry, 0, bytes.Count(b, []byte{'\n'})+1)
	sets := map[string]cpuset.Set{} // a placement repeats a few CPU lists
	i := -1
	for line := range strings.SplitSeq(string(b), "\n") {
		i++
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var words [5]string
		f := fieldsInto(words[:0], line)
		if len(f) != 3 && (len(f) != 4 || f[3] != "refused") {
			return nil, fmt.Errorf("%s:%d: want \"<irq> <cpus before> <cpus set> [refused]\", got %q", path, i+1, textfmt.Clip(line, 60))
		}
		n, err := parseIRQ(f[0])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, i+1, err)
		}
		p := Placed{IRQ: n, Refused: len(f) == 4}
		for j, dst := range []*cpuset.Set{&p.From, &p.To} {
			set, ok := sets[f[1+j]]
			if !ok {
				if set, err = cpuset.Parse(f[1+j]); err != nil || set.IsEmpty() {
					return nil, fmt.Errorf("%s:%d: %q is not a CPU list", path, i+1, textfmt.Clip(f[1+j], 60))
				}
				sets[f[1+j]] = set
			}
			*dst = set
		}
		es = append(es, entry{p, i + 1})
	}
	// In order, an IRQ listed twice is next to itself, its later line
	// second.
	slices.SortStableFunc(es, func(a, b entry) int { return a.IRQ - b.IRQ })
	out := make([]Placed, len(es))
	for k, e := range es {
		if k > 0 && es[k-1].IRQ == e.IRQ {
			return nil, fmt.Errorf("%s:%d: IRQ %d listed twice", path, e.line, e.IRQ)
		}
		out[k] = e.Placed
	}
	return out, nil
}

// fieldsInto is strings.Fields into f's room: at most cap(f) words, the
// last of a line with more holding the rest (which then fails the
// caller's check), with no allocation for a list's line.
func fieldsInto(f []string, s string) []string {
	for s != "" && len(f) < cap(f) {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			break
		}
		end := strings.IndexAny(s, " \t")
		if end < 0 || len(f) == cap(f)-1 {
			end = len(s)
		}
		f = append(f, s[:end])
		s = s[end:]
	}
	return f
}
