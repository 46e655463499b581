//go:build bench

package e2e

import (
	"fmt"
	"os"
	"os/exec"
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
	// A real node's sysfs lives in memory: keep the simulated one on tmpfs
	// too when there is one, so its 224 per-CPU files cost what sysfs costs
	// rather than a disk's journal. The spool stays on disk, as
	// /var/lib/gpuprep does.
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		shm, err := os.MkdirTemp("/dev/shm", "gpuprep-bench-root-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(shm) })
		if err := exec.Command("cp", "-a", n.root+"/.", shm).Run(); err != nil {
			t.Fatal(err)
		}
		n.root = shm
	}
	flag := filepath.Join(t.TempDir(), "use-gpuprep")
	args := " --root " + n.root + " --gpu-backend mock:dgxh100 --config " + n.cfg + " --state-dir " + n.spool + ` "$@"`
	// GPUPREP_BENCH_HOOKS=prolog (or epilog) puts only that hook in the
	// comparison, to see where the time goes.
	only := os.Getenv("GPUPREP_BENCH_HOOKS")
	hook := func(op string) string {
		if only != "" && only != op {
			return "#!/bin/sh\nexit 0\n"
		}
		if d := os.Getenv("GPUPREP_BENCH_SLEEP"); d != "" {
			// Calibration: a hook that only sleeps as long as gpuprep runs.
			return "#!/bin/sh\n[ -e " + flag + " ] && exec /bin/sleep " + d + "\nexit 0\n"
		}
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
	mw, mo := quantile(with, 0.5), quantile(without, 0.5)
	t.Logf("srun -n1 true, %d jobs each, interleaved: with gpuprep median %v (p90 %v), with `exit 0` hooks median %v (p90 %v): gpuprep adds %v at the median",
		jobs, mw.Round(time.Millisecond), quantile(with, 0.9).Round(time.Millisecond), mo.Round(time.Millisecond),
		quantile(without, 0.9).Round(time.Millisecond), (mw - mo).Round(time.Millisecond))
}

func quantile(d []time.Duration, q float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(q*float64(len(s)-1)+0.5)]
}
