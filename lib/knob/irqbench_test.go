package knob

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"gpuprep/internal/testroot"
	"gpuprep/lib/host"
)

// largeIRQNode is a dgxh100 root given a large node's interrupts by
// test/mkirqs.sh (64 vectors for each GPU and HCA, 256 other IRQs: 1,345
// in all), and its irq_affinity knob in a run whose profile sets
// housekeeping_cpus, as make bench's bench-irq runs it.
func largeIRQNode(b *testing.B) (*irqAffinityKnob, host.Root) {
	b.Helper()
	r := host.NewRoot(testroot.Unpack(b, "dgxh100"))
	script := filepath.Join(testroot.Module(b), "test", "mkirqs.sh")
	if out, err := exec.Command("bash", script, r.Dir(), "64", "256").CombinedOutput(); err != nil {
		b.Fatalf("mkirqs.sh: %v\n%s", err, out)
	}
	k := Find(NodeKnobs(r, cpusetOf(b, "")), ID{Name: "irq_affinity", Scope: NodeScope}).(*irqAffinityKnob)
	env := k.run.env
	env.Settings = hkProfile("cores_per_numa:1")
	k.run = newRun(env, k.f)
	if _, _, err := k.run.Housekeeping(); err != nil {
		b.Fatal(err)
	}
	return k, r
}

// fresh is k as a new run of the hooks sees it: nothing kept from an
// earlier run but what the run resolves for every knob (the topology and
// the housekeeping CPUs, which housekeeping_cpus pays for in the hooks).
func fresh(k *irqAffinityKnob) *irqAffinityKnob {
	k2 := *k
	k2.planned, k2.last = planned{}, lastList{}
	return &k2
}

// BenchmarkIRQAffinityLargeNode is irq_affinity's own work in each of the
// hooks' runs that bench-irq times as whole processes: a first apply
// (Desired computing the placement, Apply), a job's prolog while another
// holds the placement (Desired and Read of the held list), an epilog that
// is not the last (Read), and the restore (Read, Apply("")).
func BenchmarkIRQAffinityLargeNode(b *testing.B) {
	k, _ := largeIRQNode(b)
	apply := func(k *irqAffinityKnob) Value {
		v, err := k.Desired("on")
		if err != nil {
			b.Fatal(err)
		}
		if err := k.Apply(v); err != nil {
			b.Fatal(err)
		}
		return v
	}
	restore := func(k *irqAffinityKnob) {
		if _, err := k.Read(); err != nil {
			b.Fatal(err)
		}
		if err := k.Apply(""); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("first apply", func(b *testing.B) {
		for b.Loop() {
			apply(fresh(k))
			b.StopTimer()
			restore(fresh(k))
			b.StartTimer()
		}
	})
	b.Run("held: prolog", func(b *testing.B) {
		want := apply(fresh(k))
		for b.Loop() {
			k := fresh(k)
			if v, err := k.Desired("on"); err != nil || v != want {
				b.Fatalf("Desired %v", err)
			}
			if v, err := k.Read(); err != nil || v != want {
				b.Fatalf("Read %v", err)
			}
		}
		b.StopTimer()
		restore(fresh(k))
	})
	b.Run("held: epilog not last", func(b *testing.B) {
		want := apply(fresh(k))
		for b.Loop() {
			if v, err := fresh(k).Read(); err != nil || v != want {
				b.Fatalf("Read %v", err)
			}
		}
		b.StopTimer()
		restore(fresh(k))
	})
	b.Run("restore", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			apply(fresh(k))
			b.StartTimer()
			restore(fresh(k))
		}
	})
}

// BenchmarkIRQFilesFloor is the least any run that checks or moves every
// IRQ of that node can cost, whatever gpuprep does around it: each IRQ's
// smp_affinity_list opened, read (or written) and closed, once, spread
// over as many threads as the process may run, with nothing parsed or
// kept. The hooks' added time is this floor plus what they do with it.
func BenchmarkIRQFilesFloor(b *testing.B) {
	_, r := largeIRQNode(b)
	ents, err := os.ReadDir(r.Path("/proc/irq"))
	if err != nil {
		b.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			names = append(names, e.Name()+"/smp_affinity_list")
		}
	}
	dir, err := unix.Open(r.Path("/proc/irq"), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(dir)
	each := func(flags int, do func(fd int) error) {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range runtime.GOMAXPROCS(0) {
			wg.Go(func() {
				for i := int(next.Add(1) - 1); i < len(names); i = int(next.Add(1) - 1) {
					fd, err := unix.Openat(dir, names[i], flags|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
					if err == nil {
						err = do(fd)
						unix.Close(fd)
					}
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	b.Run("read each IRQ once", func(b *testing.B) {
		for b.Loop() {
			each(unix.O_RDONLY, func(fd int) error {
				var buf [512]byte
				_, err := unix.Read(fd, buf[:])
				return err
			})
		}
	})
	b.Run("write each IRQ once", func(b *testing.B) {
		cpus := []byte("0-223") // what each holds: the same length each time
		for b.Loop() {
			each(unix.O_WRONLY, func(fd int) error {
				_, err := unix.Pwrite(fd, cpus, 0)
				return err
			})
		}
	})
	b.ReportMetric(float64(len(names)), "IRQs")
}
