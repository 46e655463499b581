package hook

import (
	"context"
	"fmt"
	"gpuprep/lib/plan"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"gpuprep/internal/gpumock"
	"gpuprep/internal/testroot"
	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
	"gpuprep/lib/gpu/nvmlgpu"
	"gpuprep/lib/host"
)

// [mig] reconfigure on mock:dgxa100 (GPU 0: 3g.20gb + 2g.10gb): a dry run
// only says what it would do; a GPU a process uses or another job holds is
// refused with nothing changed; otherwise the layout is changed, read back,
// kept across processes, and the gres.conf Slurm now needs is given.
func TestPrologReconfiguresMIG(t *testing.T) {
	e := newEnv(t, "dgxa100", "mock:dgxa100")
	layout := func(l string) {
		t.Helper()
		c, err := config.Parse("test.toml", []byte(testConfig+"[mig]\nreconfigure = true\n[mig.layout]\n\"0\" = "+l+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		e.cfg = c
	}
	mig := func(b gpu.Backend) string {
		t.Helper()
		st, err := b.(gpu.MIGReader).MIG(0)
		if err != nil {
			t.Fatal(err)
		}
		return describeMIGState(st)
	}
	const before = "3g.20gb+2g.10gb"
	seven := `["1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb"]`
	bus := "0000:07:00.0"

	// A layout this GPU cannot have is refused, even in a dry run.
	layout(`["7g.80gb"]`)
	o := e.opts(1, []int{0}, "")
	o.DryRun = true
	if _, err := Prolog(context.Background(), o); err == nil || !strings.Contains(err.Error(), `; not reconfigured: it cannot have that layout: nvml: GPU 0: MIG profile "7g.80gb": this GPU has no such profile (it has 1g.10gb, 1g.5gb, `) || !strings.HasSuffix(err.Error(), ", 7g.40gb)") {
		t.Errorf("impossible layout: %v", err)
	}

	// A dry run says what it would do and does nothing.
	layout(seven)
	o = e.opts(1, []int{0}, "")
	o.DryRun = true
	out, err := Prolog(context.Background(), o)
	if err != nil || len(out.MIG) != 1 || out.MIG[0].Reconfigure != "would reconfigure" || mig(e.gpu) != before {
		t.Fatalf("dry run: err %v MIG %+v, layout %s", err, out.MIG, mig(e.gpu))
	}
	bus = out.MIG[0].BusID

	// A process uses the GPU.
	d0 := e.gpu.(*nvmlgpu.NVML).Interface().(*server.Server).Devices[0].(*server.Device)
	gpumock.SetFaults(d0, gpumock.Faults{Processes: []int{4242, 77}})
	want := "MIG mismatch on GPU 0 (" + bus + "): want 7x1g.5gb, found " + before + "; not reconfigured: in use by process 77, 4242"
	if _, err := Prolog(context.Background(), e.opts(1, []int{0}, "")); err == nil || err.Error() != want || !IsNodeError(err) {
		t.Errorf("busy GPU: %v\nwant %s", err, want)
	}
	gpumock.SetFaults(d0, gpumock.Faults{})

	// Another job holds the GPU (its prolog ran before the layout was
	// configured).
	e.cfg, _ = config.Parse("test.toml", []byte(testConfig))
	e.prolog(2, []int{0, 1}, "")
	layout(seven)
	want = "MIG mismatch on GPU 0 (" + bus + "): want 7x1g.5gb, found " + before + "; not reconfigured: job 2 holds it"
	if _, err := Prolog(context.Background(), e.opts(3, []int{0}, "")); err == nil || err.Error() != want {
		t.Errorf("held GPU: %v\nwant %s", err, want)
	}
	if mig(e.gpu) != before {
		t.Errorf("a refused reconfigure changed the layout: %s", mig(e.gpu))
	}
	e.epilog(2)

	// Idle: reconfigured, verified, and the job's profile applied.
	out = e.prolog(4, []int{0}, "")
	if len(out.MIG) != 1 || out.MIG[0].Reconfigure != "reconfigured" || out.MIG[0].Was != before || out.MIG[0].Found != "7x1g.5gb" || !out.MIG[0].OK {
		t.Errorf("reconfigure: %+v", out.MIG)
	}
	if len(out.Changes) == 0 || e.read("proc/sys/vm/swappiness") != "10" {
		t.Errorf("profile not applied after a reconfigure: %+v", out.Changes)
	}
	migLines := 0
	for _, l := range out.MIGGres {
		if strings.Contains(l, "MultipleFiles=") && strings.Contains(l, "1g.5gb") {
			migLines++
		}
	}
	if migLines != 7 || !slices.ContainsFunc(plan.Texts(out.Warnings), func(w string) bool { return strings.Contains(w, "restart slurmd") }) {
		t.Errorf("gres lines after the change (%d MIG lines): %q\nwarnings %q", migLines, out.MIGGres, out.Warnings)
	}
	e.epilog(4)
	// The layout stays, for a process that opens the GPUs afresh.
	b2, err := gpu.Open("mock:dgxa100", host.NewRoot(e.root))
	if err != nil {
		t.Fatal(err)
	}
	if got := mig(b2); got != "7x1g.5gb" {
		t.Errorf("layout read by another process: %s", got)
	}
	out = e.prolog(5, []int{0}, "")
	if out.MIG[0].Reconfigure != "" || !out.MIG[0].OK || len(out.MIGGres) != 0 {
		t.Errorf("a matching layout was reconfigured again: %+v", out.MIG)
	}
	e.epilog(5)

	// MIG off.
	layout("[]")
	out = e.prolog(6, []int{0}, "")
	if out.MIG[0].Reconfigure != "reconfigured" || out.MIG[0].Found != "MIG disabled" || mig(e.gpu) != "MIG disabled" {
		t.Errorf("MIG off: %+v, layout %s", out.MIG, mig(e.gpu))
	}
	e.epilog(6)

	// A mode change that needs a reset the driver could not do.
	d0 = e.gpu.(*nvmlgpu.NVML).Interface().(*server.Server).Devices[0].(*server.Device)
	d0.SetMigModeFunc = func(int) (nvml.Return, nvml.Return) { return nvml.ERROR_RESET_REQUIRED, nvml.SUCCESS }
	layout(seven)
	_, err = Prolog(context.Background(), e.opts(7, []int{0}, ""))
	if err == nil || !IsNodeError(err) || !strings.Contains(err.Error(), "MIG reconfigure on GPU 0 ("+bus+") to 7x1g.5gb failed") ||
		!strings.Contains(err.Error(), "MIG mode enabled takes effect only after a GPU reset that the driver could not do") {
		t.Errorf("reset needed: %v", err)
	}
}

// A profile this GPU does not have changes nothing and names the ones it
// has.
func TestSetMIGLayoutUnknownProfile(t *testing.T) {
	e := newEnv(t, "dgxa100", "mock:dgxa100")
	err := e.gpu.(gpu.MIGConfigurer).SetMIGLayout(0, []string{"3g.20gb", "9g.99gb"})
	if err == nil || !strings.Contains(err.Error(), `MIG profile "9g.99gb": this GPU has no such profile (it has `) || !strings.Contains(err.Error(), "7g.40gb") {
		t.Errorf("unknown profile: %v", err)
	}
	st, _ := e.gpu.(gpu.MIGReader).MIG(0)
	if got := describeMIGState(st); got != "3g.20gb+2g.10gb" {
		t.Errorf("layout changed by a refused call: %s", got)
	}
}

// A job asks for a layout of [mig.requests] in its comment: it is made
// when the GPU is idle; when a process uses the GPU the job runs on the
// node's layout with a warning, and the node is not drained. A partition's
// layout applies to that partition's jobs.
func TestPrologMIGRequest(t *testing.T) {
	e := newEnv(t, "dgxa100", "mock:dgxa100")
	c, err := config.Parse("test.toml", []byte(testConfig+`
[mig]
reconfigure = true
[mig.layout]
"0" = ["3g.20gb", "2g.10gb"]
[mig.partitions.inference.layout]
"0" = {"1g.5gb" = 7}
[mig.requests.halves.layout]
all = {"3g.20gb" = 2}
`))
	if err != nil {
		t.Fatal(err)
	}
	e.cfg = c
	d0 := e.gpu.(*nvmlgpu.NVML).Interface().(*server.Server).Devices[0].(*server.Device)

	// Busy GPU: the request is not made; the node's layout matches.
	gpumock.SetFaults(d0, gpumock.Faults{Processes: []int{99}})
	out := e.prolog(1, []int{0}, "gpuprep_mig=halves")
	if out.MIG[0].From != "mig" || !out.MIG[0].OK || out.MIG[0].Reconfigure != "" ||
		!slices.ContainsFunc(plan.Texts(out.Warnings), func(w string) bool {
			return strings.HasPrefix(w, `MIG layout "halves" requested but not made (`) && strings.Contains(w, "in use by process 99")
		}) {
		t.Errorf("busy request: MIG %+v warnings %q", out.MIG, out.Warnings)
	}
	e.epilog(1)
	gpumock.SetFaults(d0, gpumock.Faults{})

	// Idle: the request is made.
	out = e.prolog(2, []int{0}, "gpuprep_mig=halves")
	if out.MIG[0].From != "mig.requests.halves" || out.MIG[0].Reconfigure != "reconfigured" || out.MIG[0].Found != "2x3g.20gb" {
		t.Errorf("request: %+v", out.MIG)
	}
	e.epilog(2)

	// The partition's layout.
	o := e.opts(3, []int{0}, "")
	o.Job.Partition = "inference"
	out, err = Prolog(context.Background(), o)
	if err != nil || out.MIG[0].From != "mig.partitions.inference" || out.MIG[0].Found != "7x1g.5gb" {
		t.Errorf("partition: %v %+v", err, out.MIG)
	}
}

// A job given MIG devices (MultipleFiles= records in gres.conf): the MIG
// layout of their GPU is checked, its GPU knobs are not set (other jobs
// share the GPU's settings), and a mismatch is not reconfigured under it.
func TestPrologMIGDeviceJob(t *testing.T) {
	e := newEnv(t, "dgxa100", "mock:dgxa100")
	all := testroot.GPUs(t, e.root)
	m0 := all[0].Minor // GPU 0 holds a 3g.20gb and a 2g.10gb
	var b strings.Builder
	for k := 0; k < 2; k++ {
		fmt.Fprintf(&b, "Name=gpu MultipleFiles=/dev/nvidia%d,/dev/nvidia-caps/nvidia-cap%d,/dev/nvidia-caps/nvidia-cap%d\n", m0, 100+2*k, 101+2*k)
	}
	for _, d := range all[1:] {
		fmt.Fprintf(&b, "Name=gpu File=/dev/nvidia%d\n", d.Minor)
	}
	writeGresConf(t, e.root, b.String())
	gpu0 := e.settings(0)
	c, err := config.Parse("test.toml", []byte(testConfig+"[mig]\nreconfigure = true\n[mig.layout]\nall = []\n\"0\" = [\"3g.20gb\", \"2g.10gb\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	e.cfg = c
	out := e.prolog(1, []int{1}, "")
	if len(out.MIG) != 1 || out.MIG[0].GPU != 0 || !out.MIG[0].OK {
		t.Errorf("MIG check of the job's MIG device's GPU: %+v", out.MIG)
	}
	if !slices.ContainsFunc(plan.Texts(out.Warnings), func(w string) bool { return strings.HasPrefix(w, "GPU knobs skipped: the job's GPUs are MIG devices") }) {
		t.Errorf("no warning that GPU knobs are skipped: %q", out.Warnings)
	}
	for _, ch := range out.Changes {
		if strings.HasPrefix(ch.ID.Name, "gpu_") {
			t.Errorf("a MIG device job changed GPU knob %s", ch.ID)
		}
	}
	if s := e.settings(0); !reflect.DeepEqual(s, gpu0) {
		t.Errorf("GPU 0 settings changed: %+v, want %+v", s, gpu0)
	}
	e.epilog(1)

	c, _ = config.Parse("test.toml", []byte(testConfig+"[mig]\nreconfigure = true\n[mig.layout]\n\"0\" = {\"1g.5gb\" = 7}\n"))
	e.cfg = c
	_, err = Prolog(context.Background(), e.opts(2, []int{0}, ""))
	if err == nil || !strings.HasSuffix(err.Error(), "; not reconfigured: the job holds MIG devices of the present layout") {
		t.Errorf("reconfigure under a MIG device job: %v", err)
	}
}
