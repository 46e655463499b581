package knob

import (
	"math/rand/v2"
	"testing"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/irq"
)

// placementValue writes what formatIRQValue writes for the same IRQs, for
// lists of every size, in any order, with a few CPU lists between them (a
// node's placement) or many.
func TestPlacementValueIsFormatIRQValue(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	lists := []cpuset.Set{cpuset.MustParse("0,2"), cpuset.MustParse("0-1,112-113"), cpuset.MustParse("5"), cpuset.MustParse("0-223")}
	for round := range 300 {
		n := rng.IntN(1400)
		if round < 3 {
			n = round // none, one, two
		}
		irqs := rng.Perm(4096)[:n]
		placed := make([]irq.Placed, n)
		m := map[int]cpuset.Set{}
		for i, num := range irqs {
			to := lists[rng.IntN(len(lists))]
			if round%5 == 0 {
				to = cpuset.New(rng.IntN(224), rng.IntN(224)) // many lists
			}
			placed[i] = irq.Placed{IRQ: num, From: lists[0], To: to, Refused: rng.IntN(10) == 0}
			m[num] = to
		}
		if got, want := placementValue(placed), formatIRQValue(m); got != want {
			t.Fatalf("round %d, %d IRQs: placementValue\n%.300s\nformatIRQValue\n%.300s", round, n, got, want)
		}
	}
}
