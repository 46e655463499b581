package knob

import (
	"errors"
	"strings"
	"testing"

	"gpuprep/internal/testroot"
	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
	"gpuprep/lib/plan"
)

// gpu_accounting on the mock: off on a fresh GPU, on and back as
// persistence is, on that GPU alone; its words are persistence's.
func TestGPUAccounting(t *testing.T) {
	b, devs := mockGPUs(t)
	k := gpuKnobNamed(t, b, devs[4], "gpu_accounting")
	if orig, want := roundTrip(t, k, "true"); orig != "off" || want != "on" {
		t.Fatalf("orig %q want %q", orig, want)
	}
	mustApply(t, k, "on")
	if v := mustRead(t, gpuKnobNamed(t, b, devs[5], "gpu_accounting")); v != "off" {
		t.Fatalf("GPU 5 reads %q", v)
	}
	if on, err := b.(gpu.AccountingSetter).AccountingMode(devs[4].Index); !on || err != nil {
		t.Fatalf("the backend reads %v, %v", on, err)
	}
	for setting, want := range map[string]Value{"ON": "on", " false ": "off", "enabled": "on", "0": "off"} {
		if v := mustDesired(t, k, setting); v != want {
			t.Errorf("Desired(%q) = %q", setting, v)
		}
	}
	_, err := k.Desired("maybe")
	wantErr(t, err, "gpu_accounting", `"maybe" is not on or off`)
}

// A GPU in MIG mode (the dgxa100 mock's GPU 0) reads unsupported, saying
// MIG: from the run's inventory, and from the backend where the inventory
// cannot tell (light mode lists GPUs from procfs); the plan skips it with
// that reason, and the GPU beside it takes accounting.
func TestGPUAccountingMIG(t *testing.T) {
	b, err := gpu.Open("mock:dgxa100", host.NewRoot(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	devs, _ := b.Devices()
	if !devs[0].MIG.Current {
		t.Fatal("GPU 0 not in MIG mode")
	}
	unknown := devs[0]
	unknown.MIG = gpu.MIGState{}
	for _, d := range []gpu.Device{devs[0], unknown} {
		k := gpuKnobNamed(t, b, d, "gpu_accounting")
		_, err := k.Read()
		wantUnsupported(t, err)
		wantErr(t, err, "gpu_accounting", "MIG mode")
		wantUnsupported(t, k.Apply("on"))
	}
	k := gpuKnobNamed(t, b, devs[0], "gpu_accounting")
	_, rerr := k.Read()
	p := plan.ForJob("100", []plan.Observed{{ID: k.ID(), Err: rerr, Desired: "on", HasDesired: true}}, emptyState())
	if len(p.Changes) != 0 || len(p.Skipped) != 1 || !strings.Contains(p.Skipped[0].Reason, "MIG mode") {
		t.Fatalf("plan on a MIG GPU: %+v", p)
	}
	roundTrip(t, gpuKnobNamed(t, b, devs[1], "gpu_accounting"), "on")
}

// A backend without accounting (procfs, a settings-only one) reads
// unsupported, naming the backend; so does Apply, before its value.
func TestGPUAccountingUnsupported(t *testing.T) {
	dev := gpu.Device{Index: 0, UUID: "GPU-x"}
	pb := gpu.OpenProcfs(host.NewRoot(testroot.Shared(t, "dgxh100")))
	for _, b := range []gpu.Backend{pb, &fakeGPU{}} {
		k := gpuKnobNamed(t, b, dev, "gpu_accounting")
		_, err := k.Read()
		wantUnsupported(t, err)
		wantErr(t, err, "gpu_accounting", "GPU backend "+b.Name()+" has no accounting mode")
		wantUnsupported(t, k.Apply("on"))
		wantUnsupported(t, k.Apply("300"))
	}
	// A backend's NOT_SUPPORTED is unsupported too; another failure not.
	f := &fakeAccounting{err: gpu.ErrUnsupported}
	_, err := gpuKnobNamed(t, f, dev, "gpu_accounting").Read()
	wantUnsupported(t, err)
	f.err = errors.New("GPU is lost")
	_, err = gpuKnobNamed(t, f, dev, "gpu_accounting").Read()
	wantErr(t, err, "gpu_accounting", "GPU is lost")
	if errors.Is(err, ErrUnsupported) {
		t.Fatal("a lost GPU reads unsupported")
	}
	// A GPU that keeps its mode: a mismatch.
	f.err = nil
	wantMismatch(t, gpuKnobNamed(t, f, dev, "gpu_accounting").Apply("on"), "on", "off")
}

// Counted across jobs, as every knob: the first job records the baseline
// (off) and turns it on, a second job holds it too, and only the last
// one's release turns it off (which clears the records).
func TestGPUAccountingShared(t *testing.T) {
	b, devs := mockGPUs(t)
	k := gpuKnobNamed(t, b, devs[0], "gpu_accounting")
	observe := func(desired bool) []plan.Observed {
		v, err := k.Read()
		return []plan.Observed{{ID: k.ID(), Current: v, Err: err, Desired: "on", HasDesired: desired}}
	}
	apply := func(p *plan.Plan) {
		for _, c := range p.Changes {
			mustApply(t, k, c.To)
		}
	}
	p1 := plan.ForJob("1", observe(true), emptyState())
	apply(p1)
	p2 := plan.ForJob("2", observe(true), p1.State)
	if len(p2.Changes) != 0 || p2.State.Baseline[k.ID().String()] != "off" {
		t.Fatalf("second job: %+v", p2)
	}
	r1 := plan.Release("1", p1.Holds, observe(false), nil, p2.State)
	if len(r1.Changes) != 0 {
		t.Fatalf("first job's release changes %+v", r1.Changes)
	}
	r2 := plan.Release("2", p2.Holds, observe(false), nil, r1.State)
	if len(r2.Changes) != 1 || r2.Changes[0].To != "off" {
		t.Fatalf("last release: %+v", r2.Changes)
	}
	apply(r2)
	if v := mustRead(t, k); v != "off" {
		t.Fatalf("after the last release: %q", v)
	}
}

func emptyState() plan.NodeState {
	return plan.NodeState{Baseline: map[string]Value{}, Holders: map[string]plan.Holding{}}
}

// fakeAccounting is a settings-less backend whose accounting mode stays
// off, its reads failing with err.
type fakeAccounting struct {
	gpu.None
	err error
}

func (f *fakeAccounting) AccountingMode(int) (bool, error)  { return false, f.err }
func (f *fakeAccounting) SetAccountingMode(int, bool) error { return nil }
