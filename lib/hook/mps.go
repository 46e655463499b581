package hook

import (
	"gpuprep/lib/knob"
	"gpuprep/lib/mps"
)

// mpsEnv is how the mps knob runs its daemons in this run: o.MPS as
// given, with, when it names no launcher, one that keeps each daemon out
// of the hook's own cgroup (slurmd's): a transient systemd unit where PID
// 1 is systemd (o.Units is set then), else a cgroup of gpuprep's under
// the cgroup v2 root (mps.Cgroupfs, which warns when it cannot). Its log
// is the run's.
func mpsEnv(o *Options) knob.MPSEnv {
	e := o.MPS
	if e.Launcher == nil && e.Control == nil {
		if o.Units != nil {
			e.Launcher = mps.Systemd{}
		} else {
			e.Launcher = mps.Cgroupfs{Root: o.Root}
		}
	}
	if e.Log == nil {
		e.Log = o.Log
	}
	return e
}

// mpsKnob is the mps knob's key: a job that asked for gres/mps
// (slurm.Job.MPS) gets it set to true where its profile does not
// set it.
const mpsKnob = "mps"

// mpsOn is the setting mps = true decodes to (the knob's Def.Decode).
func mpsOn() string {
	d, _ := knob.Lookup(mpsKnob)
	s, _ := d.Decode(true)
	return s
}
