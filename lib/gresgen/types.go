// Package gresgen turns the node model into Slurm configuration: the gres.conf
// records for the node's GPUs and MIG devices, the slurm.conf node line, and
// warnings (with their fix) about layouts Slurm handles badly. Planning is
// pure: it reads only the topo.Node it is given.
package gresgen

import (
	"strings"

	"gpuprep/lib/config"
	"gpuprep/lib/cpuset"
)

// Options shape the generated configuration.
type Options struct {
	// Name is the GRES name, "gpu" unless the site uses another.
	Name string
	// TypeNames maps Slurm's autodetected type ("nvidia_h100_80gb_hbm3")
	// or the NVML product name ("NVIDIA H100 80GB HBM3") to a short type
	// ("h100"). A MIG type keeps the profile suffix: "h100_3g.40gb".
	TypeNames map[string]string
	// Sockets is what the node line counts as sockets when chosen
	// explicitly (--numa-as-socket, [gres] numa_as_socket = true or
	// false); "" follows Slurmd, what slurmd itself will count
	// ([gres] numa_as_socket = "auto", the default).
	Sockets SocketView
	// SocketsBy names the explicit choice for the output
	// ("--numa-as-socket=false"); "" with Sockets "".
	SocketsBy string
	// Slurmd is what slurmd on the node will count as sockets, from the
	// SlurmdParameters of its slurm.conf (ReadSlurmdView); nil when not
	// read, which counts real sockets.
	Slurmd *SlurmdView
	// NodeName overrides the node's short hostname.
	NodeName string
	// NodeNameLines starts every gres.conf line with NodeName=<node>, for
	// a gres.conf several nodes share (configless Slurm).
	NodeNameLines bool
	// Housekeeping is the default profile's housekeeping_cpus (an
	// isolate.Spec): the node line then holds CpuSpecList= for those CPUs,
	// so that Slurm keeps job tasks off them. "" for none.
	Housekeeping string
	// MPSGPUs are the GPUs that get a Name=mps record ([gres] mps_gpus),
	// each with Count=MPSCount (0: config.DefaultMPSCount); nil or
	// "none" for none.
	MPSGPUs  config.GPUSelection
	MPSCount int
}

// Device is one gres.conf record: a whole GPU or a MIG device.
type Device struct {
	Name string `json:"name"`
	Type string `json:"type"`
	File string `json:"file,omitempty"` // whole GPU: /dev/nvidia<minor>
	// MultipleFiles is set for a MIG device: the parent GPU's device file,
	// then the GPU instance's and the compute instance's nvidia-caps files.
	MultipleFiles []string   `json:"multiple_files,omitempty"`
	Cores         cpuset.Set `json:"cores"` // Slurm abstract core ids
	// Links are NVLink counts to each GPU record in file order, -1 for
	// itself; nil when unknown or when MIG devices are present.
	Links []int `json:"links,omitempty"`

	GPUIndex int    `json:"gpu_index"` // NVML index of the (parent) GPU
	BusID    string `json:"bus_id"`
	MIG      string `json:"mig,omitempty"` // "gi1/ci0" for a MIG device
	// Count is a Name=mps record's Count= (its GPU's share units); 0
	// for a GPU or MIG device record (one device).
	Count uint64 `json:"count,omitempty"`
}

// Files are the device files the record covers.
func (d Device) Files() []string {
	if d.File != "" {
		return []string{d.File}
	}
	return d.MultipleFiles
}

// Key identifies a record across generated and parsed configurations: its
// device files.
func (d Device) Key() string { return strings.Join(d.Files(), ",") }

// NodeLine is the slurm.conf NodeName line for the node.
type NodeLine struct {
	NodeName       string      `json:"node_name"`
	CPUs           int         `json:"cpus"`
	Sockets        int         `json:"sockets"`
	CoresPerSocket int         `json:"cores_per_socket"`
	ThreadsPerCore int         `json:"threads_per_core"`
	RealMemory     uint64      `json:"real_memory"` // MiB
	Gres           []GresCount `json:"gres"`
	// CpuSpecList are the Slurm abstract CPU ids reserved for the system
	// (the housekeeping CPUs); empty for none.
	CpuSpecList cpuset.Set `json:"cpu_spec_list,omitzero"`
	// HousekeepingCPUs are the OS CPUs of CpuSpecList.
	HousekeepingCPUs cpuset.Set `json:"housekeeping_cpus,omitzero"`
}

// GresCount is one entry of the node line's Gres=: gpu:<type>:<count>.
type GresCount struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Count int    `json:"count"`
}

// Warning is something the admin should know, with the fix.
type Warning struct {
	Msg string `json:"msg"`
	Fix string `json:"fix,omitempty"`
}

func (w Warning) String() string {
	if w.Fix == "" {
		return w.Msg
	}
	return w.Msg + "; fix: " + w.Fix
}

// Result is the generated configuration.
type Result struct {
	Devices []Device `json:"devices"`
	// MPS are the Name=mps records (mps.go): one per whole GPU that
	// [gres] mps_gpus marks, after the GPU records in gres.conf.
	MPS      []Device  `json:"mps,omitempty"`
	Node     NodeLine  `json:"node"`
	Warnings []Warning `json:"warnings,omitempty"`
	// SocketsAs is what the node line counts as sockets, and SocketsNote
	// says why, naming the slurm.conf (and line) that decided it, or the
	// flag or setting that chose it, or that no slurm.conf was found.
	SocketsAs   SocketView `json:"sockets_as"`
	SocketsNote string     `json:"sockets_note"`
	// SlurmdParameter is the SlurmdParameters value slurm.conf must have
	// for slurmd to count the node line's sockets ("numa_node_as_socket",
	// "l3cache_as_socket"); "" when they are the real sockets.
	SlurmdParameter string `json:"slurmd_parameter,omitempty"`
	// NeedsNUMAAsSocket is set when the node line counts NUMA nodes as
	// sockets, which slurm.conf must be told (SlurmdParameter is
	// numa_node_as_socket).
	NeedsNUMAAsSocket bool `json:"needs_numa_node_as_socket"`
	// SlurmConfAgrees says that the slurm.conf read already makes slurmd
	// count the node line's sockets.
	SlurmConfAgrees bool `json:"slurm_conf_agrees"`
	// LinksUnknown says that the records have no Links= because the GPU
	// backend cannot read NVLinks (procfs): the node has several GPUs,
	// none in MIG mode, and no NVLink counts. The caller, which knows why
	// that backend was used, warns.
	LinksUnknown bool `json:"-"`

	nodeNameLines bool // Options.NodeNameLines, for WriteGres
	// registered is the node line as slurmd will register it (sockets as
	// Options.Slurmd says), for Check.
	registered NodeLine
}
