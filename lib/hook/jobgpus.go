package hook

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"gpuprep/lib/gpu"
	"gpuprep/lib/gresconf"
	"gpuprep/lib/plan"
	"gpuprep/lib/textfmt"
)

// What SLURM_JOB_GPUS means (measured with Slurm 22.05.8 in the real-Slurm
// harness, test/e2e TestSlurmJobGPUsAreGresOrder): the prolog's
// SLURM_JOB_GPUS (and its CUDA_VISIBLE_DEVICES and GPU_DEVICE_ORDINAL, and
// a step's SLURM_STEP_GPUS) are indexes into slurmd's GPU list in gres.conf
// order: the node's File= entries as written, a range File=/dev/nvidia[0-7]
// expanded in its own order, lines not sorted by file name. They are neither
// device minors nor PCI positions. So index i is the GPU whose device file
// is the i-th gres.conf entry, and its minor (/dev/nvidia<minor>) names the
// physical GPU. slurmd -G prints "Index=<minor>" for each line, which is not
// that index. A job's own CUDA_VISIBLE_DEVICES in its task is 0..n-1 once
// the devices cgroup confines it.
//
// Links= do not reorder them (reversed lines whose Links= put -1 at each
// GPU's PCI position keep the written order). Slurm reads global Name=
// lines before NodeName= lines; so does gresMinors.
//
// With AutoDetect (not measured: Debian's slurm-wlm ships no NVML plugin),
// Slurm 22.05's gres_gpu.c (_merge_system_gres_conf) keeps only the
// detected GPUs that match gres.conf, sorts them by file name and then by
// the -1 in their Links (NVML's enumeration order), and Type= matching can
// drop some: too many cases to guess from, so the GPU knobs are skipped
// there, with the fix in the warning.

// gresConfPath is the gres.conf slurmd reads: the configured one, else the
// one beside SLURM_CONF, else /etc/slurm/gres.conf (a node path, read under
// the hook's root).
func gresConfPath(configured, slurmConf string) string {
	switch {
	case configured != "" && configured != "auto":
		return configured
	case slurmConf != "":
		return path.Join(path.Dir(slurmConf), "gres.conf")
	default:
		return "/etc/slurm/gres.conf"
	}
}

// gresDevice is one of Slurm's GPUs (a GRES record's device) as
// SLURM_JOB_GPUS numbers them: the minor of its /dev/nvidia<N>, and whether
// it is a MIG device of that GPU; Caps are a MIG device's
// /dev/nvidia-caps/nvidia-cap<N> minors (its GPU instance's and compute
// instance's access files), which tell the MIG device (jobMIGs).
type gresDevice struct {
	Minor int
	MIG   bool
	Caps  []int
}

// gresMinors lists node's GRES devices named name in the order Slurm
// numbers them: one per File= entry, and one per MultipleFiles= record (a
// MIG device; its GPU is the /dev/nvidia<N> among its files), as Slurm
// 22.05's common_node_config_load counts them. An error says why the order
// cannot be known (AutoDetect, a line with no File=, a file that is not
// /dev/nvidia<N>).
func gresMinors(g *gresconf.Conf, node, name string) ([]gresDevice, error) {
	ad, err := g.AutoDetectFor(node)
	if err != nil {
		return nil, err
	}
	if ad != "" && !strings.EqualFold(ad, "off") {
		return nil, fmt.Errorf("%s: AutoDetect=%s: Slurm numbers the GPUs it finds itself (write gres.conf with gpuprep-gres, AutoDetect=off, to have the job's GPUs tuned)", g.File, ad)
	}
	var devs []gresconf.Device
	for _, global := range []bool{true, false} {
		for _, l := range g.Lines {
			if !strings.EqualFold(l.Name, name) || (l.NodeName == "") != global || !l.AppliesTo(node) {
				continue
			}
			devs = append(devs, l.Devices()...)
		}
	}
	out := make([]gresDevice, 0, len(devs))
	for _, d := range devs {
		if len(d.MultipleFiles) > 0 {
			k := slices.IndexFunc(d.MultipleFiles, func(f string) bool { _, ok := nvidiaMinor(f); return ok })
			if k < 0 {
				return nil, fmt.Errorf("%s line %d: MultipleFiles= names no /dev/nvidia<N>", g.File, d.Line)
			}
			m, _ := nvidiaMinor(d.MultipleFiles[k])
			out = append(out, gresDevice{Minor: m, MIG: true, Caps: capMinors(d.MultipleFiles)})
			continue
		}
		if d.File == "" {
			return nil, fmt.Errorf("%s line %d: Name=%s with no File=", g.File, d.Line, d.Name)
		}
		m, ok := nvidiaMinor(d.File)
		if !ok {
			return nil, fmt.Errorf("%s line %d: File=%s is not /dev/nvidia<N>", g.File, d.Line, d.File)
		}
		out = append(out, gresDevice{Minor: m})
	}
	return out, nil
}

// capMinors are the N of the /dev/nvidia-caps/nvidia-cap<N> among files.
func capMinors(files []string) []int {
	var out []int
	for _, f := range files {
		s, ok := strings.CutPrefix(f, "/dev/nvidia-caps/nvidia-cap")
		if n, err := strconv.Atoi(s); ok && err == nil && n >= 0 {
			out = append(out, n)
		}
	}
	return out
}

// jobMIGs names the job's MIG devices (the SLURM_JOB_GPUS indexes idx that
// devs, from gresMinors, says are MIG records) by their UUIDs: on the GPU
// of the record's /dev/nvidia<N>, the MIG device (as the backend lists it,
// all) whose GPU and compute instance cap minors are both among the
// record's cap files. A record that names none of the GPU's MIG devices,
// or one without a UUID, is an error: the job's MIG devices are not
// known for sure.
func jobMIGs(all []gpu.Device, idx []int, devs []gresDevice) ([]string, error) {
	var out []string
	for _, i := range idx {
		if i < 0 || i >= len(devs) || !devs[i].MIG {
			continue
		}
		k := slices.IndexFunc(all, func(d gpu.Device) bool { return d.Minor == devs[i].Minor })
		if k < 0 {
			return nil, fmt.Errorf("MIG device %d: /dev/nvidia%d is not among the GPU backend's GPUs", i, devs[i].Minor)
		}
		m := slices.IndexFunc(all[k].MIG.Devices, func(m gpu.MIGDevice) bool {
			return m.GICapMinor >= 0 && m.CICapMinor >= 0 && slices.Contains(devs[i].Caps, m.GICapMinor) && slices.Contains(devs[i].Caps, m.CICapMinor)
		})
		if m < 0 {
			return nil, fmt.Errorf("MIG device %d: no MIG device of GPU %d has the cap files %s of its gres.conf record", i, all[k].Index, textfmt.JoinInts(devs[i].Caps, ","))
		}
		uuid := all[k].MIG.Devices[m].UUID
		if uuid == "" {
			return nil, fmt.Errorf("MIG device %d: the GPU backend gives GPU %d's MIG devices no UUIDs", i, all[k].Index)
		}
		if !slices.Contains(out, uuid) {
			out = append(out, uuid)
		}
	}
	return out, nil
}

// nvidiaMinor is N of a .../nvidiaN file name.
func nvidiaMinor(file string) (int, bool) {
	s, ok := strings.CutPrefix(path.Base(file), "nvidia")
	if !ok || s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// mapJobGPUs turns SLURM_JOB_GPUS indexes into the node's GPUs through
// devs (gresMinors: the device of each index). A GPU several of the job's
// MIG devices are on is listed once; mig says some index is a MIG device.
func mapJobGPUs(all []gpu.Device, idx []int, devs []gresDevice, src string) (gpus []gpu.Device, mig bool, err error) {
	for _, i := range idx {
		if i < 0 || i >= len(devs) {
			return nil, false, fmt.Errorf("SLURM_JOB_GPUS names GPU %d, but %s lists %d GPUs for this node", i, src, len(devs))
		}
		k := slices.IndexFunc(all, func(d gpu.Device) bool { return d.Minor == devs[i].Minor })
		if k < 0 {
			return nil, false, fmt.Errorf("SLURM_JOB_GPUS names GPU %d, %s's /dev/nvidia%d, which the GPU backend does not list", i, src, devs[i].Minor)
		}
		mig = mig || devs[i].MIG
		if !slices.ContainsFunc(gpus, func(d gpu.Device) bool { return d.UUID == all[k].UUID }) {
			gpus = append(gpus, all[k])
		}
	}
	return gpus, mig, nil
}

// jobGPUs maps SLURM_JOB_GPUS to the node's GPUs through gres.conf (read
// under o.Root). When that cannot be done for sure it returns no GPU and a
// warning: the GPU knobs are skipped, never applied to a GPU that may be
// another job's. mig says the job holds MIG devices: gpus are the GPUs
// they are on, which other jobs may share.
func jobGPUs(o *run) (gpus []gpu.Device, mig bool, warning string) {
	if o.GPU == nil || o.GPU.Name() == "none" || len(o.Job.GPUs) == 0 {
		return nil, false, ""
	}
	skip := func(err error) ([]gpu.Device, bool, string) {
		return nil, false, fmt.Sprintf("GPU knobs skipped: cannot tell which GPUs SLURM_JOB_GPUS=%s are: %v", textfmt.JoinInts(o.Job.GPUs, ","), err)
	}
	devs, p, err := gresDevices(o)
	if err != nil {
		return skip(err)
	}
	gpus, mig, err = mapJobGPUs(o.devices(), o.Job.GPUs, devs, p)
	if err != nil {
		return skip(err)
	}
	return gpus, mig, ""
}

// gresDevices reads gres.conf (under o.Root) once per run and lists its
// GPU devices in the order Slurm numbers them (gresMinors); p is its path.
func gresDevices(o *run) (devs []gresDevice, p string, err error) {
	if o.gresRead {
		return o.gres, o.gresPath, o.gresErr
	}
	o.gresRead = true
	o.gresPath = gresConfPath(o.Config.Gres.Conf, o.Job.Conf)
	o.gres, o.gresErr = readGresDevices(o, o.gresPath)
	return o.gres, o.gresPath, o.gresErr
}

func readGresDevices(o *run, p string) ([]gresDevice, error) {
	b, err := o.Root.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: no such file (set gres.conf in gpuprep's config)", p)
	}
	if err != nil {
		return nil, err
	}
	g, err := gresconf.Parse(p, b)
	if err != nil {
		return nil, err
	}
	node := o.Job.NodeName
	if node == "" {
		node = o.Node
	}
	return gresMinors(g, node, o.Config.Gres.Name)
}

// migScopes finds the job's MIG devices (jobMIGs) when its GPUs are MIG
// devices known for sure, for the knobs that apply to MIG devices (mps).
// When they cannot be told, and the profile sets mps, out says why MPS
// is skipped.
func migScopes(o *run, out *Outcome, j *prologJob) []string {
	if !j.migDevs || !j.known {
		return nil
	}
	devs, _, err := gresDevices(o)
	var uuids []string
	if err == nil {
		uuids, err = jobMIGs(o.withMIGUUIDs(o.devices()), o.Job.GPUs, devs)
	}
	if err == nil {
		return uuids
	}
	if _, ok := j.prof.Knobs.Setting("mps"); ok {
		out.warn(plan.KindGPUs, "MPS skipped on the job's MIG devices: cannot tell which they are: %v", err)
	}
	return nil
}

// slurmGPUMinors is the /dev/nvidia minor of each of Slurm's GPU indexes
// (gres.conf order; a MIG record counts as its GPU), for srunwrap to map
// SLURM_STEP_GPUS; nil when gres.conf cannot tell.
func slurmGPUMinors(o *run) []int {
	devs, _, err := gresDevices(o)
	if err != nil {
		return nil
	}
	out := make([]int, len(devs))
	for i, d := range devs {
		out[i] = d.Minor
	}
	return out
}
