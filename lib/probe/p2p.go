package probe

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"gpuprep/lib/cuda"
)

// peerCopies measures the copy between every pair of GPUs that could be
// opened, both ways, in rounds of disjoint pairs (rounds): the pairs of a
// round run at once, each GPU in one pair at most. A pair without peer
// access is reported (PeerAccess false, Why) and not measured: a copy then
// goes through host memory, which is not the GPU's path.
func peerCopies(ctx context.Context, o Options, runs []*gpuRun) []Pair {
	var open []*gpuRun
	for _, g := range runs {
		if g.res.Error == "" {
			open = append(open, g)
		}
	}
	var out []Pair
	for _, round := range rounds(len(open)) {
		if ctx.Err() != nil {
			break
		}
		got := make([][2]Pair, len(round))
		var wg sync.WaitGroup
		for i, p := range round {
			wg.Add(1)
			go func() {
				defer wg.Done()
				a, b := open[p[0]], open[p[1]]
				got[i] = [2]Pair{peerCopy(o, a, b), peerCopy(o, b, a)}
			}()
		}
		wg.Wait()
		for _, g := range got {
			out = append(out, g[0], g[1])
		}
	}
	return out
}

// rounds pairs n GPUs so that every pair meets once and no GPU is in two
// pairs of a round: the circle method (n-1 rounds for even n; for odd n a
// GPU sits each round out).
func rounds(n int) [][][2]int {
	m := n + n%2 // an odd count gets a "bye"
	var out [][][2]int
	for r := 0; r < m-1; r++ {
		var round [][2]int
		for i := 0; i < m/2; i++ {
			a, b := circleSeat(r, i, m), circleSeat(r, m-1-i, m)
			if a < n && b < n {
				round = append(round, [2]int{min(a, b), max(a, b)})
			}
		}
		if len(round) > 0 {
			out = append(out, round)
		}
	}
	return out
}

// circleSeat is who sits at seat i in round r: seat 0 is fixed, the others
// turn.
func circleSeat(r, i, m int) int {
	if i == 0 {
		return 0
	}
	return (i-1+r)%(m-1) + 1
}

// peerCopy measures a copy from a's memory into b's, issued on b's stream
// with b's context given access to a's memory.
func peerCopy(o Options, a, b *gpuRun) Pair {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p := Pair{From: a.res.Index, To: b.res.Index}
	ok, err := o.Driver.CanAccessPeer(b.dev, a.dev)
	if err == nil && ok {
		err = b.ctx.EnablePeerAccess(a.ctx)
	} else if err == nil {
		err = cuda.ErrPeerUnsupported
	}
	if err != nil {
		p.Why = err.Error()
		if !errors.Is(err, cuda.ErrPeerUnsupported) {
			p.Error = err.Error()
		}
		return p
	}
	p.PeerAccess = true
	p.Measurement = measurePeer(o, a, b)
	return p
}

// measurePeer times the copy of DeviceBytes from a buffer on a to one on b.
func measurePeer(o Options, a, b *gpuRun) Measurement {
	n := o.DeviceBytes
	src, err := a.ctx.MemAlloc(n)
	if err != nil {
		return Measurement{Error: fmt.Sprintf("buffer on GPU %d: %v", a.res.Index, err)}
	}
	defer a.ctx.MemFree(src)
	dst, err := b.ctx.MemAlloc(n)
	if err != nil {
		return Measurement{Error: fmt.Sprintf("buffer on GPU %d: %v", b.res.Index, err)}
	}
	defer b.ctx.MemFree(dst)
	s, err := b.ctx.NewStream()
	if err != nil {
		return Measurement{Error: err.Error()}
	}
	defer s.Destroy()
	return measureCopy(s, o, sampler(o, b), n, 1, func() error { return s.CopyPeer(dst, b.ctx, src, a.ctx, n) })
}
