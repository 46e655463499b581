// Package nodedesc is the node description the prolog writes for srunwrap:
// the node's layout (GPUs with bus id, UUID, MIG devices, minor, NUMA node
// and local CPUs; NUMA distances; cores; HCAs with their PCI place, ports
// and net devices) and the config sections srunwrap uses, in one text file,
// /run/gpuprep/node-description, tagged with the boot id (format.go).
//
// srunwrap runs once per rank and must cost about a bare exec: it reads
// this one file (ForTask) instead of walking sysfs or loading NVML, and
// falls back to sysfs discovery (no NVML) when the file is missing or
// stale. The prolog (root) rewrites it only when something it records
// changed (NeedsWrite), atomically, root-owned and world-readable, never
// through a symlink, so users cannot plant or alter it.
//
// The package also keeps the per-job notices (notice.go): what the prolog
// recorded for a job that its user should know, printed once by srunwrap's
// local rank 0.
package nodedesc

import (
	"errors"
	"fmt"
	"time"

	"gpuprep/lib/srunconf"

	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
	"gpuprep/lib/topo"
)

// Path is where the description lives, a node path under a host.Root.
const Path = "/run/gpuprep/node-description"

// NoticeDir holds the per-job notices, one file named <jobid> each.
const NoticeDir = "/run/gpuprep/jobs"

// Version is the description's format version; a file of another version
// is stale. 1 was JSON.
const Version = 2

// runDir is the directory of Path and NoticeDir's parent.
const runDir = "/run/gpuprep"

// ErrMissing is wrapped by Load when there is no description.
var ErrMissing = errors.New("node description missing")

// ErrStale is wrapped by Load when the description cannot be trusted: it
// was written in another boot, in another format version, or the file is
// not one the prolog wrote (not a regular file, writable by others, owned
// by another user, or in a directory that is).
var ErrStale = errors.New("node description stale")

// Description is the node as the prolog found it, for srunwrap.
type Description struct {
	Version int    `json:"version"`
	BootID  string `json:"boot_id"` // /proc/sys/kernel/random/boot_id when written
	// Gpuprep is the version of the gpuprep that wrote it (cmdenv.Version).
	Gpuprep string    `json:"gpuprep"`
	Written time.Time `json:"written"`
	// Node is topo.Discover with NICs, without Node.CPUs (srunwrap needs
	// cores and NUMA nodes only), MIG device UUIDs filled in.
	Node     topo.Node                `json:"node"`
	Srunwrap srunconf.SrunwrapSection `json:"srunwrap"`
	NCCL     srunconf.NCCLSection     `json:"nccl"`
	// ConfigFile is the configuration file the sections came from
	// (lib/config's Config.File).
	ConfigFile string `json:"config_file"`
	// SlurmGPUs is the /dev/nvidia minor of each of Slurm's GPU indexes
	// (gres.conf order, as SLURM_STEP_GPUS numbers them); nil when the
	// prolog could not tell (AutoDetect, no gres.conf).
	SlurmGPUs []int `json:"slurm_gpus"`
}

// Settings are the configuration srunwrap needs, as the prolog read it:
// [srunwrap], [nccl] and the file they came from.
type Settings struct {
	Srunwrap   srunconf.SrunwrapSection
	NCCL       srunconf.NCCLSection
	ConfigFile string
	// SlurmGPUs: as Description.SlurmGPUs, from the gres.conf slurmd reads.
	SlurmGPUs []int
}

// Build discovers the node under r with b, the prolog's GPU backend. That
// backend runs in light mode (gpu.Light: GPUs listed from
// /proc/driver/nvidia, MIG devices without UUIDs), so for each GPU with MIG
// devices lacking a UUID Build asks b's MIGReader (nvmlDeviceGetMigDeviceHandleByIndex
// and GetUUID for NVML): only those GPUs pay an NVML call. version is the
// writer's cmdenv.Version.
func Build(r host.Root, b gpu.Backend, set Settings, version string) (*Description, error) {
	boot, err := host.ReadBootID(r)
	if err != nil {
		return nil, fmt.Errorf("node description: %w", err)
	}
	n, err := topo.Discover(r, b, topo.Options{NICs: true})
	if err != nil {
		return nil, fmt.Errorf("node description: %w", err)
	}
	n.CPUs = nil
	if err := fillMIGUUIDs(n, b); err != nil {
		return nil, fmt.Errorf("node description: %w", err)
	}
	d := &Description{Version: Version, BootID: boot, Gpuprep: version, Written: time.Now().UTC(), Node: *n,
		Srunwrap: set.Srunwrap, NCCL: set.NCCL, ConfigFile: set.ConfigFile, SlurmGPUs: set.SlurmGPUs}
	// What the file keeps of it, so that the prolog compares and srunwrap
	// reads the same thing.
	return decode(Path, encode(d))
}

// fillMIGUUIDs reads the MIG devices of each GPU whose devices lack a UUID
// through b's MIGReader, keeping the cap minors the listing had where the
// reader gives none.
func fillMIGUUIDs(n *topo.Node, b gpu.Backend) error {
	if b == nil {
		return nil
	}
	var mr gpu.MIGReader
	checked := false
	for i := range n.GPUs {
		g := &n.GPUs[i]
		if !lacksUUID(g.MIG.Devices) {
			continue
		}
		if !checked {
			var ok bool
			if mr, ok = gpu.As[gpu.MIGReader](b); !ok {
				return nil // the backend cannot tell: no UUIDs
			}
			checked = true
		}
		st, err := mr.MIG(g.Index)
		if err != nil {
			return fmt.Errorf("GPU %d (%s): MIG devices: %w", g.Index, g.BusID, err)
		}
		g.MIG = gpu.MergeMIG(g.MIG, st)
	}
	return nil
}

func lacksUUID(ms []gpu.MIGDevice) bool {
	for _, m := range ms {
		if m.UUID == "" {
			return true
		}
	}
	return false
}
