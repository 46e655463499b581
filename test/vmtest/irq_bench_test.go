//go:build bench

package vmtest

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestIRQHookTimes is a benchmark (-tags bench; issue 32): the prolog and
// epilog run by hand as slurmd runs them (a job of alice on no GPU), on
// the VM's real kernel, systemd and /proc/irq, with housekeeping_cpus
// alone and with irq_affinity too, cycles of both in turn; it logs each
// hook's median. Under TCG every process is slow: what it shows is the
// ratio on a real kernel's /proc/irq, not a node's milliseconds.
func TestIRQHookTimes(t *testing.T) {
	Node(t)
	ctx := Ctx(t, 20*time.Minute)
	const cycles = 7
	cfgs := []struct{ name, toml string }{{"housekeeping_cpus alone", hkConfig}, {"with irq_affinity", irqConfig}}
	times := map[string][]float64{}
	for i := range cycles {
		for _, c := range cfgs {
			SetConfig(t, c.toml)
			id := strconv.Itoa(9100 + 2*i)
			env := "SLURM_JOB_ID=" + id + " SLURM_JOB_USER=alice SLURM_JOB_UID=4242 SLURM_JOB_GID=4242 "
			out := MustRun(t, ctx, `t0=$(date +%s%N); `+env+`SLURM_SCRIPT_CONTEXT=prolog_slurmd /usr/local/sbin/gpuprep-prolog >/dev/null 2>&1 || echo failed;`+
				` t1=$(date +%s%N); `+env+`SLURM_SCRIPT_CONTEXT=epilog_slurmd /usr/local/sbin/gpuprep-epilog >/dev/null 2>&1 || echo failed;`+
				` t2=$(date +%s%N); echo $(( (t1-t0)/1000 )) $(( (t2-t1)/1000 ))`)
			f := strings.Fields(out)
			if len(f) != 2 {
				t.Fatalf("%s, cycle %d: %q", c.name, i, out)
			}
			for k, hook := range []string{"prolog", "epilog"} {
				us, _ := strconv.ParseFloat(f[k], 64)
				times[c.name+", "+hook] = append(times[c.name+", "+hook], us/1000)
			}
		}
	}
	irqs := strings.TrimSpace(MustRun(t, ctx, "ls /proc/irq | grep -c '^[0-9]'"))
	t.Logf("%s IRQs; medians of %d cycles (first apply, then restore: each job alone):", irqs, cycles)
	for _, hook := range []string{"prolog", "epilog"} {
		a, b := median(times[cfgs[0].name+", "+hook]), median(times[cfgs[1].name+", "+hook])
		t.Logf("%s: %s %.1f ms, %s %.1f ms (%.2fx)", hook, cfgs[0].name, a, cfgs[1].name, b, b/a)
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
