//go:build bench

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
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
	// GPUPREP_BENCH_IRQS="64 256" gives the node a large node's interrupts
	// (test/mkirqs.sh ROOT 64 256); GPUPREP_BENCH_PROFILE replaces the
	// config's [profiles.default] table (TOML).
	if v := os.Getenv("GPUPREP_BENCH_IRQS"); v != "" {
		mk := exec.Command("bash", append([]string{"../mkirqs.sh", n.root}, strings.Fields(v)...)...)
		if out, err := mk.CombinedOutput(); err != nil {
			t.Fatalf("mkirqs.sh: %v\n%s", err, out)
		}
	}
	if v := os.Getenv("GPUPREP_BENCH_PROFILE"); v != "" {
		cfg := "[general]\nlog_file = \"\"\ndeadline = \"60s\"\nmetrics_dir = \"\"\n" + v
		if err := os.WriteFile(n.cfg, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
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
	pw, po := quantile(with, 0.9), quantile(without, 0.9)
	t.Logf("srun -n1 true, %d jobs each, interleaved: with gpuprep median %v (p90 %v), with `exit 0` hooks median %v (p90 %v): gpuprep adds %v at the median, %v at the 90th percentile",
		jobs, mw.Round(time.Millisecond), pw.Round(time.Millisecond), mo.Round(time.Millisecond),
		po.Round(time.Millisecond), (mw - mo).Round(time.Millisecond), (pw - po).Round(time.Millisecond))
}

func quantile(d []time.Duration, q float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(q*float64(len(s)-1)+0.5)]
}

// TestPrologStep is a benchmark (-tags bench, test/bench-step.sh): how a
// prolog's duration turns into a job's start, on a real Slurm. A prolog
// that only sleeps d (read from a file each time: one cluster for every
// d), for d from 20 to 120 ms in 5 ms steps (GPUPREP_STEP_FROM, _TO,
// _BY), against the same prolog sleeping 0, interleaved job by job;
// it logs srun -n1 true's median and 90th percentile added time at each
// d. With PrologFlags=Alloc (the harness's), srun 22.05 asks slurmctld
// whether the prolog is done at 0, 100, 300, 600 ms (allocate.c,
// _wait_nodes_ready), 23.02 on at 0, 100, 1100 ms: a prolog that misses
// the 100 ms check costs the next one.
func TestPrologStep(t *testing.T) {
	dfile := filepath.Join(t.TempDir(), "sleep")
	os.WriteFile(dfile, []byte("0\n"), 0o644)
	hook := "#!/bin/sh\nread d < " + dfile + "\n[ \"$d\" = 0 ] || exec /bin/sleep \"$d\"\nexit 0\n"
	c := slurmharness.Start(t, slurmharness.Options{
		Files:  map[string]string{"prolog.sh": hook, "epilog.sh": "#!/bin/sh\nexit 0\n"},
		Prolog: "prolog.sh", Epilog: "epilog.sh",
	})
	env := func(name string, def int) int {
		v := def
		if s := os.Getenv(name); s != "" {
			if _, err := fmt.Sscan(s, &v); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		return v
	}
	from, to, by, jobs := env("GPUPREP_STEP_FROM", 20), env("GPUPREP_STEP_TO", 120), env("GPUPREP_STEP_BY", 5), env("GPUPREP_BENCH_JOBS", 8)
	c.MustSrun("-n1", "true") // warm up
	t.Logf("prolog sleep | srun -n1 true added at the median | at the 90th percentile (%d jobs each, against a prolog sleeping 0)", jobs)
	for d := from; d <= to; d += by {
		var with, without []time.Duration
		for i := 0; i < 2*jobs; i++ {
			s := "0"
			if i%2 == 0 {
				s = fmt.Sprintf("%.3f", float64(d)/1000)
			}
			os.WriteFile(dfile, []byte(s+"\n"), 0o644)
			c.WaitNodeState(10*time.Second, "idle")
			start := time.Now()
			c.MustSrun("-n1", "true")
			if i%2 == 0 {
				with = append(with, time.Since(start))
			} else {
				without = append(without, time.Since(start))
			}
		}
		t.Logf("%4d ms | %+5d ms | %+5d ms", d, (quantile(with, 0.5) - quantile(without, 0.5)).Milliseconds(),
			(quantile(with, 0.9) - quantile(without, 0.9)).Milliseconds())
	}
}
