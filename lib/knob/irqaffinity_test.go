package knob

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"gpuprep/lib/host"
	"gpuprep/lib/irq"
)

// irqFixture is the interrupt layer addIRQs gives a root: on a node of
// two NUMA nodes (node0 0-55,112-167; node1 the rest, as dgxh100), a GPU
// on each node, an HCA on node1, other IRQs, and a managed one.
var irqFixture = struct {
	gpu0, gpu1, hca string
	gpu0IRQs        []int // MSI-X on node 0
	gpu1IRQs        []int // on node 1
	hcaIRQs         []int // on node 1
	other           []int // a NIC queue, the serial port: movable, on every CPU
	managed         int   // read-only smp_affinity_list (Linux 6.12+)
}{
	gpu0: "0000:18:00.0", gpu1: "0000:9a:00.0", hca: "0000:9b:00.0",
	gpu0IRQs: []int{60, 61}, gpu1IRQs: []int{160, 161}, hcaIRQs: []int{170}, other: []int{4, 30}, managed: 40,
}

// addIRQs writes /proc/interrupts, /proc/irq/<n>/ and the PCI functions
// of irqFixture into r; every IRQ starts on all CPUs (0-223).
func addIRQs(t testing.TB, r host.Root) {
	t.Helper()
	f := irqFixture
	files := map[string]string{}
	mode := map[string]os.FileMode{}
	var all []int
	dev := func(bdf, vendor, class string, numa int, local string, irqs []int) {
		d := "/sys/bus/pci/devices/" + bdf + "/"
		files[d+"vendor"], files[d+"class"] = vendor, class
		files[d+"numa_node"], files[d+"local_cpulist"], files[d+"irq"] = strconv.Itoa(numa), local, "0"
		for _, n := range irqs {
			files[d+"msi_irqs/"+strconv.Itoa(n)] = "msix"
		}
		all = append(all, irqs...)
	}
	dev(f.gpu0, "0x10de", "0x030200", 0, "0-55,112-167", f.gpu0IRQs)
	dev(f.gpu1, "0x10de", "0x030200", 1, "56-111,168-223", f.gpu1IRQs)
	dev(f.hca, "0x15b3", "0x020700", 1, "56-111,168-223", f.hcaIRQs)
	all = append(all, f.other...)
	all = append(all, f.managed)
	slices.Sort(all)
	var b strings.Builder
	b.WriteString("           CPU0       CPU1\n")
	for _, n := range all {
		fmt.Fprintf(&b, "%4d:         %d          0  IR-PCI-MSIX-0000:18:00.0   %d-edge      irq%d\n", n, n, n, n)
		files[irq.AffinityPath(n)] = "0-223"
	}
	mode[irq.AffinityPath(f.managed)] = 0o444
	files[irq.InterruptsPath] = b.String()
	for p, c := range files {
		full := r.Path(p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		m := mode[p]
		if m == 0 {
			m = 0o644
		}
		if err := os.WriteFile(full, []byte(c+"\n"), m); err != nil {
			t.Fatal(err)
		}
	}
	// The HCA as /sys/class/infiniband lists it: a link to the device's
	// folder under its PCI function.
	ib := "/sys/bus/pci/devices/" + f.hca + "/infiniband/mlx5_0"
	if err := os.MkdirAll(r.Path(ib), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(r.Path("/sys/class/infiniband"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(ib, r.Path("/sys/class/infiniband/mlx5_0")); err != nil {
		t.Fatal(err)
	}
}

// irqKnob is the irq_affinity knob of a dgxh100 root with addIRQs.
func irqKnob(t *testing.T) (*irqAffinityKnob, host.Root) {
	t.Helper()
	r := knobRoot(t, "dgxh100")
	k := Find(NodeKnobs(r, cpusetOf(t, "")), ID{Name: "irq_affinity", Scope: NodeScope}).(*irqAffinityKnob)
	return k, r
}

// desiredIn is k's Desired in a run whose profile is profile.
func desiredIn(k *irqAffinityKnob, setting string, profile func(string) (string, bool)) (Value, error) {
	env := k.run.env
	env.Settings = profile
	k2 := *k
	k2.run = newRun(env, k.f)
	return k2.Desired(setting)
}

func hkProfile(spec string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		if name == "housekeeping_cpus" && spec != "" {
			return spec, true
		}
		return "", false
	}
}

func affinity(t *testing.T, r host.Root, n int) string {
	t.Helper()
	return get(t, r, irq.AffinityPath(n))
}

// TestIRQAffinityDesired: device IRQs to their NUMA node (its housekeeping
// CPUs where there are some), other IRQs onto the housekeeping CPUs, the
// managed IRQ left out; without housekeeping, only the devices'.
func TestIRQAffinityDesired(t *testing.T) {
	k, _ := irqKnob(t)
	if v := mustDesired(t, k, "on"); v != "60-61=0-55,112-167;160-161,170=56-111,168-223" {
		t.Errorf("without housekeeping: %q", v)
	}
	v, err := desiredIn(k, "on", hkProfile("0-1,56-57"))
	if err != nil || v != "4,30=0-1,56-57;60-61=0-1;160-161,170=56-57" {
		t.Errorf("with housekeeping 0-1,56-57: %q, %v", v, err)
	}
	// Whole cores per NUMA node, resolved as housekeeping_cpus resolves
	// them (knobRoot leaves out the CPUs' topology folders: no SMT
	// siblings here).
	v, err = desiredIn(k, "on", hkProfile("cores_per_numa:1"))
	if err != nil || v != "4,30=0,56;60-61=0;160-161,170=56" {
		t.Errorf("with one core per node: %q, %v", v, err)
	}
	if _, err := k.Desired("off"); !errors.Is(err, ErrLeaveAlone) {
		t.Errorf("off: %v, want leave alone", err)
	}
	if _, err := desiredIn(k, "on", hkProfile("0-999")); err == nil {
		t.Error("housekeeping CPUs beyond the node: no error")
	}
}

// TestIRQAffinityApplyRestore: Apply writes every IRQ and keeps what each
// held; Read gives the Value back; a second job's Desired is the same;
// Apply("") puts every IRQ back exactly and removes the list.
func TestIRQAffinityApplyRestore(t *testing.T) {
	k, r := irqKnob(t)
	set(t, r, irq.AffinityPath(30), "3-5\n") // one IRQ placed by the admin
	if v := mustRead(t, k); v != "" {
		t.Fatalf("baseline %q", v)
	}
	want, _ := desiredIn(k, "on", hkProfile("0-1,56-57"))
	mustApply(t, k, want)
	for n, cpus := range map[int]string{4: "0-1,56-57", 30: "0-1,56-57", 60: "0-1", 161: "56-57", 170: "56-57", 40: "0-223"} {
		if got := affinity(t, r, n); got != cpus {
			t.Errorf("IRQ %d: %q, want %q", n, got, cpus)
		}
	}
	if got := mustRead(t, k); got != want {
		t.Errorf("Read after Apply %q, want %q", got, want)
	}
	b, err := os.ReadFile(r.Path(irq.PlacedPath))
	if err != nil || !strings.Contains(string(b), "\n30 3-5 0-1,56-57\n") || !strings.Contains(string(b), "\n60 0-223 0-1\n") {
		t.Errorf("%s: %q, %v", irq.PlacedPath, b, err)
	}
	// The plan of a later job is the same placement (computed from what
	// the IRQs held before gpuprep), so the jobs share one Value.
	if again, _ := desiredIn(k, "on", hkProfile("0-1,56-57")); again != want {
		t.Errorf("Desired after Apply %q, want %q", again, want)
	}
	// Someone moves one: Read shows it (drift).
	set(t, r, irq.AffinityPath(60), "7\n")
	if got := mustRead(t, k); got == want || !strings.Contains(string(got), "60=7") {
		t.Errorf("Read after a move: %q", got)
	}
	mustApply(t, k, "")
	for n, cpus := range map[int]string{4: "0-223", 30: "3-5", 60: "0-223", 161: "0-223", 170: "0-223", 40: "0-223"} {
		if got := affinity(t, r, n); got != cpus {
			t.Errorf("restored IRQ %d: %q, want %q", n, got, cpus)
		}
	}
	if _, err := os.Lstat(r.Path(irq.PlacedPath)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s left after the restore: %v", irq.PlacedPath, err)
	}
	if v := mustRead(t, k); v != "" {
		t.Errorf("Read after the restore %q", v)
	}
	mustApply(t, k, "") // idempotent
}

// TestIRQAffinityRefused: an IRQ the kernel refuses (EIO at the write, as
// managed IRQs before Linux 6.12) is counted and reads as placed: no error,
// no drift; the restore does not touch it.
func TestIRQAffinityRefused(t *testing.T) {
	k, r := irqKnob(t)
	k.f = &refusingFS{Root: r, irqs: map[int]bool{61: true}}
	want := mustDesired(t, k, "on")
	mustApply(t, k, want)
	if got := affinity(t, r, 61); got != "0-223" {
		t.Errorf("refused IRQ 61 holds %q", got)
	}
	if got := mustRead(t, k); got != want {
		t.Errorf("Read %q, want %q (a refused IRQ is no drift)", got, want)
	}
	b, _ := os.ReadFile(r.Path(irq.PlacedPath))
	if !strings.Contains(string(b), "\n61 0-223 0-55,112-167 refused\n") {
		t.Errorf("list %q", b)
	}
	mustApply(t, k, "")
	if got := affinity(t, r, 60); got != "0-223" {
		t.Errorf("restored 60: %q", got)
	}
}

// refusingFS plays a kernel that refuses to move some IRQs (EIO).
type refusingFS struct {
	host.Root
	irqs map[int]bool
}

func (f *refusingFS) WriteFile(p, v string) (string, error) {
	for n := range f.irqs {
		if p == irq.AffinityPath(n) {
			return "", &fs.PathError{Op: "write", Path: p, Err: syscall.EIO}
		}
	}
	return f.Root.WriteFile(p, v)
}

// addIrqbalance adds a running irqbalance (pid 900) with the given
// arguments.
func addIrqbalance(t *testing.T, r host.Root, args ...string) {
	t.Helper()
	dir := r.Path("/proc/900")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	set(t, r, "/proc/900/comm", "irqbalance\n")
	for _, d := range []string{"/usr/lib/gpuprep", "/etc"} {
		if err := os.MkdirAll(r.Path(d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	set(t, r, irq.PolicyScriptPath, irq.PolicyScript(irq.PlacedPath, irq.ProcIRQDir, false))
	set(t, r, "/etc/irqbalance-other", "#!/bin/sh\necho ban=false\n")
	set(t, r, "/proc/900/cmdline", strings.Join(append([]string{"/usr/sbin/irqbalance"}, args...), "\x00")+"\x00")
}

// TestIRQAffinityIrqbalance: beside an irqbalance that runs gpuprep's
// policy script, Apply lists the IRQs and asks for a rescan (SIGHUP)
// before it writes them, and the restore hands them back: unlisted,
// another SIGHUP, affinities left for irqbalance to place.
func TestIRQAffinityIrqbalance(t *testing.T) {
	k, r := irqKnob(t)
	addIrqbalance(t, r, "--foreground", "--policyscript="+irq.PolicyScriptPath)
	var events []string
	k.signal = func(pid int) error {
		b, _ := os.ReadFile(r.Path(irq.PlacedPath))
		ps, _ := irq.ParsePlaced(irq.PlacedPath, b)
		events = append(events, fmt.Sprintf("SIGHUP %d, listed %d, IRQ 60 on %s", pid, len(ps), affinity(t, r, 60)))
		return nil
	}
	want := mustDesired(t, k, "on")
	mustApply(t, k, want)
	if len(events) != 1 || events[0] != "SIGHUP 900, listed 5, IRQ 60 on 0-223" {
		t.Errorf("before the writes: %q", events)
	}
	mustApply(t, k, "")
	if len(events) != 2 || events[1] != "SIGHUP 900, listed 0, IRQ 60 on 0-55,112-167" {
		t.Errorf("the hand-back: %q", events)
	}
	if got := affinity(t, r, 60); got != "0-55,112-167" {
		t.Errorf("IRQ 60 after the hand-back %q: irqbalance places it, gpuprep does not write", got)
	}
}

// TestIRQAffinityIrqbalanceUnaware: an irqbalance without gpuprep's policy
// script would undo the placement; nothing is written and the error says
// how to start it.
func TestIRQAffinityIrqbalanceUnaware(t *testing.T) {
	k, r := irqKnob(t)
	addIrqbalance(t, r, "--foreground", "-l", "/etc/irqbalance-other")
	k.signal = func(int) error { t.Error("SIGHUP sent"); return nil }
	err := k.Apply(mustDesired(t, k, "on"))
	if !errors.Is(err, ErrIrqbalanceUnaware) || !strings.Contains(err.Error(), "--policyscript="+irq.PolicyScriptPath) ||
		!strings.Contains(err.Error(), "pid 900, --policyscript=/etc/irqbalance-other") {
		t.Errorf("Apply: %v", err)
	}
	if got := affinity(t, r, 60); got != "0-223" {
		t.Errorf("IRQ 60 moved: %q", got)
	}
	if _, err := os.Lstat(r.Path(irq.PlacedPath)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("list written: %v", err)
	}
}

// TestIRQAffinityUntrustedList: a list others can write, or a link in its
// place, is refused, never followed.
func TestIRQAffinityUntrustedList(t *testing.T) {
	k, r := irqKnob(t)
	full := r.Path(irq.PlacedPath)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte("60 0-223 5\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(full, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Read(); err == nil || !strings.Contains(err.Error(), "writable by others") {
		t.Errorf("world-writable list: %v", err)
	}
	os.Remove(full)
	if err := os.Symlink("/etc/passwd", full); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Read(); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a link in place of the list: %v", err)
	}
	// A link to a well-formed list is refused too, never followed.
	good := filepath.Join(t.TempDir(), "list")
	if err := os.WriteFile(good, []byte("60 0-223 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(full)
	if err := os.Symlink(good, full); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Read(); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a link to a good list: %v", err)
	}
}

// TestIRQAffinityUnsupported: no /proc/interrupts (a container) is
// unsupported, not an error.
func TestIRQAffinityUnsupported(t *testing.T) {
	r := writeTree(t, smallNode().files())
	k := Find(NodeKnobs(r, cpusetOf(t, "")), ID{Name: "irq_affinity", Scope: NodeScope})
	if _, err := k.Read(); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Read: %v", err)
	}
}

func TestIRQValueRoundTrip(t *testing.T) {
	for _, v := range []Value{"", "4,30=0-1,56-57;60-61=0-1;160-161,170=56-57"} {
		m, err := parseIRQValue(v)
		if err != nil || formatIRQValue(m) != v {
			t.Errorf("%q: %v, %v", v, m, err)
		}
	}
	for _, bad := range []Value{"60", "60=", "=0", "60=0;60=1", "x=1", "60=0-1;;"} {
		if _, err := parseIRQValue(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestIRQAffinityUninitialisedGPU: a GPU the driver has not initialised
// (no msi_irqs/: persistence mode off, no process using it) has no
// interrupts to place; the log says so, naming it, and the others are
// placed.
func TestIRQAffinityUninitialisedGPU(t *testing.T) {
	k, r := irqKnob(t)
	var logs strings.Builder
	k.log = slog.New(slog.NewTextHandler(&logs, nil))
	if err := os.RemoveAll(r.Path("/sys/bus/pci/devices/" + irqFixture.gpu1 + "/msi_irqs")); err != nil {
		t.Fatal(err)
	}
	if v := mustDesired(t, k, "on"); v != "60-61=0-55,112-167;170=56-111,168-223" {
		t.Errorf("Desired %q", v)
	}
	if !strings.Contains(logs.String(), "devices without MSI interrupts now") || !strings.Contains(logs.String(), irqFixture.gpu1) {
		t.Errorf("log:\n%s", logs.String())
	}
}

// TestIRQAffinityHeldPlacement: a placement applied keeps the online and
// housekeeping CPUs it was computed for; a later job's Desired for the
// same CPUs is the list's value without reading /proc/interrupts or any
// IRQ again (here garbled, so a read would fail), and one for other
// housekeeping CPUs computes its own. A restore leaves no list.
func TestIRQAffinityHeldPlacement(t *testing.T) {
	k, r := irqKnob(t)
	env := k.run.env
	env.Settings = hkProfile("0-1,56-57")
	k.run = newRun(env, k.f)
	want := mustDesired(t, k, "on")
	mustApply(t, k, want)
	b, _ := os.ReadFile(r.Path(irq.PlacedPath))
	if !strings.Contains(string(b), "# computed for online CPUs 0-223, housekeeping CPUs 0-1,56-57\n") {
		t.Errorf("list without its basis:\n%s", b)
	}
	set(t, r, irq.InterruptsPath, "garbage\n")
	set(t, r, irq.AffinityPath(60), "7\n") // moved: drift, not a new placement
	if again, err := desiredIn(k, "on", hkProfile("0-1,56-57")); err != nil || again != want {
		t.Errorf("Desired of a held placement %q, %v; want %q", again, err, want)
	}
	if _, err := desiredIn(k, "on", hkProfile("0,56")); err == nil || !strings.Contains(err.Error(), irq.InterruptsPath) {
		t.Errorf("Desired for other housekeeping CPUs: %v, want it to read %s", err, irq.InterruptsPath)
	}
	mustApply(t, k, "")
	if _, err := os.Lstat(r.Path(irq.PlacedPath)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("list left after the restore: %v", err)
	}
}
