//go:build bench

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"gpuprep/test/slurmharness"
)

// TestSrunOverhead is a benchmark, built only with -tags bench (`make bench`),
// not part of `make test`: what users feel. `srun -n1 true` start to finish with
// gpuprep as Prolog/Epilog against the same with a trivial `exit 0` hook,
// interleaved job by job on one real Slurm. Both hooks go through the same
// wrapper, which picks gpuprep when a flag file exists.
func TestSrunOverhead(t *testing.T) {
	n := newHookNode(t)
	flag := filepath.Join(t.TempDir(), "use-gpuprep")
	args := " --root " + n.root + " --gpu-backend mock:dgxh100 --config " + n.cfg + " --state-dir " + n.spool + ` "$@"`
	hook := func(op string) string {
		return "#!/bin/sh\n[ -e " + flag + " ] && exec " + bin(t, "gpuprep-"+op) + args + "\nexit 0\n"
	}
	c := slurmharness.Start(t, slurmharness.Options{
		Files:  map[string]string{"prolog.sh": hook("prolog"), "epilog.sh": hook("epilog")},
		Prolog: "prolog.sh", Epilog: "epilog.sh",
	})
	jobs := 30
	if v := os.Getenv("GPUPREP_BENCH_JOBS"); v != "" {
		if _, err := fmt.Sscan(v, &jobs); err != nil {
			t.Fatal(err)
		}
	}
	var with, without []time.Duration
	c.MustSrun("-n1", "true") // warm up
	for i := 0; i < 2*jobs; i++ {
		useIt := i%2 == 0
		if useIt {
			os.WriteFile(flag, nil, 0o644)
		} else {
			os.Remove(flag)
		}
		// Wait for the previous job's epilog, so each job starts alone.
		c.WaitNodeState(10*time.Second, "idle")
		start := time.Now()
		c.MustSrun("-n1", "true")
		d := time.Since(start)
		if useIt {
			with = append(with, d)
		} else {
			without = append(without, d)
		}
	}
	mw, mo := median(with), median(without)
	t.Logf("srun -n1 true, %d jobs each, interleaved: with gpuprep median %v, with `exit 0` hooks median %v: gpuprep adds %v",
		jobs, mw.Round(time.Millisecond), mo.Round(time.Millisecond), (mw - mo).Round(time.Millisecond))
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
