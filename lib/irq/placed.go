package irq

import (
	"fmt"
	"slices"
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
	var b strings.Builder
	b.WriteString("# IRQs placed by gpuprep: irq, affinity before, affinity set\n")
	for i, p := range s {
		if i > 0 && s[i-1].IRQ == p.IRQ {
			continue
		}
		fmt.Fprintf(&b, "%d %s %s", p.IRQ, p.From, p.To)
		if p.Refused {
			b.WriteString(" refused")
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// ParsePlaced reads FormatPlaced's text back; blank lines and lines that
// start with # are skipped. path names the file in errors, with the line.
func ParsePlaced(path string, b []byte) ([]Placed, error) {
	var out []Placed
	seen := map[int]bool{}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 && (len(f) != 4 || f[3] != "refused") {
			return nil, fmt.Errorf("%s:%d: want \"<irq> <cpus before> <cpus set> [refused]\", got %q", path, i+1, textfmt.Clip(line, 60))
		}
		n, err := parseIRQ(f[0])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, i+1, err)
		}
		if seen[n] {
			return nil, fmt.Errorf("%s:%d: IRQ %d listed twice", path, i+1, n)
		}
		seen[n] = true
		p := Placed{IRQ: n, Refused: len(f) == 4}
		for j, dst := range []*cpuset.Set{&p.From, &p.To} {
			if *dst, err = cpuset.Parse(f[1+j]); err != nil || dst.IsEmpty() {
				return nil, fmt.Errorf("%s:%d: %q is not a CPU list", path, i+1, textfmt.Clip(f[1+j], 60))
			}
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Placed) int { return a.IRQ - b.IRQ })
	return out, nil
}
