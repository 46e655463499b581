package knob

import (
	"fmt"

	"gpuprep/lib/gpu"
)

// gpu_accounting, one per GPU of the job (scope GPUScope(uuid)): NVML's
// accounting mode, "on" | "off", through gpu.AccountingSetter
// (nvmlDeviceGetAccountingMode, nvmlDeviceSetAccountingMode). While it is
// on, NVML keeps a record of each process that uses the GPU (mean GPU and
// memory utilisation, peak memory), which the epilog lists per process of
// the job in its evidence (lib/evidence, Processes). Off by default on a
// booted GPU; a node setting like gpu_persistence, held across the jobs on
// the GPU and restored when the last holder ends. Turning it off clears
// every process's record, so only that restore does it.
//
// A GPU in MIG mode, where NVML keeps accounting off and cannot turn it
// on, and a backend without accounting (procfs, none) read as
// ErrUnsupported, saying which: the plan skips the knob with that reason.
// Apply verifies by reading the mode back.
type accountingKnob struct{ gpuKnob }

func init() {
	Register(Def{
		Name: "gpu_accounting", Order: 1060, Kind: GPUKind,
		Example: `true`,
		Doc:     "NVML accounting mode (GetAccountingMode, SetAccountingMode; off clears the records): per-process utilisation and peak memory in the job's evidence; true or false; not on a GPU in MIG mode",
		Decode:  decodeOnOff,
		New:     func(r *Run, id ID) Knob { return &accountingKnob{r.gpuBase(id)} },
	})
}

// setter is the backend's gpu.AccountingSetter, or ErrUnsupported for a
// GPU in MIG mode (as the run's inventory has it; the NVML backend checks
// the mode itself too) or a backend without accounting.
func (k *accountingKnob) setter() (gpu.AccountingSetter, error) {
	uuid, _ := k.id.GPU()
	if d, ok := k.run.devs[uuid]; ok && d.MIG.Current {
		return nil, fmt.Errorf("%s: GPU %d is in MIG mode, where NVML keeps accounting off and cannot turn it on: %w",
			k.id, k.index, ErrUnsupported)
	}
	b := k.run.env.GPU
	if a, ok := b.(gpu.AccountingSetter); ok {
		return a, nil
	}
	name := "none"
	if b != nil {
		name = b.Name()
	}
	return nil, fmt.Errorf("%s: GPU backend %s has no accounting mode: %w", k.id, name, ErrUnsupported)
}

func (k *accountingKnob) Read() (Value, error) {
	a, err := k.setter()
	if err != nil {
		return "", err
	}
	on, err := a.AccountingMode(k.index)
	if err != nil {
		return "", k.wrap(err)
	}
	return onOff(on), nil
}

// Desired takes the words gpu_persistence takes: on, off, true, false...
func (k *accountingKnob) Desired(setting string) (Value, error) {
	return (&persistenceKnob{k.gpuKnob}).Desired(setting)
}

func (k *accountingKnob) Apply(v Value) error {
	a, err := k.setter()
	if err != nil {
		return err
	}
	want, err := k.Desired(string(v))
	if err != nil {
		return err
	}
	if err := a.SetAccountingMode(k.index, want == "on"); err != nil {
		return k.wrap(err)
	}
	return k.verify(want, k.Read)
}
