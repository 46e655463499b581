package knob

import (
	"runtime"
	"sync"
)

// forEach runs f(0..n-1) on a few goroutines and returns the error of the
// lowest index that failed (so errors are as deterministic as a plain loop).
// Per-CPU knobs touch hundreds of small sysfs files; each access is a system
// call that waits on the kernel, so spreading them over the node's cores
// shortens the prolog that every job waits for.
func forEach(n int, f func(i int) error) error {
	workers := min(n, 2*runtime.GOMAXPROCS(0), 16)
	if workers <= 1 {
		for i := 0; i < n; i++ {
			if err := f(i); err != nil {
				return err
			}
		}
		return nil
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	next := make(chan int, n)
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = f(i)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
