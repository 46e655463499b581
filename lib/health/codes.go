package health

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gpuprep/lib/gpu"
	"gpuprep/lib/probe"
	"gpuprep/lib/probetools"
)

// ActionClass is the class of what an admin does about a failure. The classes
// follow the buckets NVIDIA's Xid catalog sorts Xids into, so that a site
// can act on the class (a script that resets GPUs, a ticket to the
// vendor) and read the rest of the reason when it needs to.
type ActionClass string

// Actions, from the least to the most a node needs.
const (
	// ClassNone: nothing to do on the node; the finding is for the record.
	ClassNone ActionClass = "none"
	// ClassRestartApp: the job's own fault (its code, its input): rerun
	// it; the node is fine unless the same GPU faults for many jobs.
	ClassRestartApp ActionClass = "restart_app"
	// ClassFixConfig: a setting of the node or of gpuprep's config.
	ClassFixConfig ActionClass = "fix_config"
	// ClassUpdateSoftware: a driver, firmware or library to upgrade.
	ClassUpdateSoftware ActionClass = "update_software"
	// ClassInvestigate: read the logs: what failed is not known well
	// enough to say more.
	ClassInvestigate ActionClass = "investigate"
	// ClassResetGPU: reset the GPU (nvidia-smi -r, with no process on it).
	ClassResetGPU ActionClass = "reset_gpu"
	// ClassReboot: reboot the node.
	ClassReboot ActionClass = "reboot"
	// ClassCheckHardware: someone at the node: seating, cables, power,
	// cooling; then reboot.
	ClassCheckHardware ActionClass = "check_hardware"
	// ClassContactVendor: the hardware is faulty: the vendor's support
	// (a replacement, an RMA).
	ClassContactVendor ActionClass = "contact_vendor"
)

// actionOrder ranks the actions: a failure made of several findings takes
// the highest.
var actionOrder = []ActionClass{ClassNone, ClassRestartApp, ClassFixConfig, ClassUpdateSoftware, ClassInvestigate,
	ClassResetGPU, ClassReboot, ClassCheckHardware, ClassContactVendor}

// stronger is the higher of two actions in actionOrder.
func stronger(a, b ActionClass) ActionClass {
	if slices.Index(actionOrder, b) > slices.Index(actionOrder, a) {
		return b
	}
	return a
}

// Code is a failure's stable name, in drain reasons, logs, the JSON report
// and the metrics: what it means and what to do about it.
type Code struct {
	Name   string      `json:"code"`
	Check  string      `json:"check"`
	Action ActionClass `json:"action"`
	Means  string      `json:"means"`
	Do     string      `json:"do"`
}

// checkCodes are the codes of the checks' failures; a check whose
// failures differ in what to do has more than one (the first is its
// default).
var checkCodes = []Code{
	{"GPU_MISSING", "gpu_count", ClassReboot,
		"fewer GPUs are listed than the node has (one fell off the bus, or the driver lost it)",
		"reboot the node; a GPU still missing after a reboot needs its seating, power and the vendor's diagnostics"},
	{"DRIVER_OLD", "driver_version", ClassUpdateSoftware,
		"the NVIDIA driver is older than [health] driver_min",
		"install the site's driver version and reboot"},
	{"PERSISTENCE_OFF", "persistence", ClassFixConfig,
		"a GPU's persistence mode is off: the driver tears the GPU down between jobs and sets it up again at each start",
		"run nvidia-persistenced (or set gpu_persistence = true in a profile)"},
	{"ECC_OFF", "ecc_mode", ClassFixConfig,
		"ECC is off, or will be after the next GPU reset",
		"nvidia-smi -e 1, then reset the GPU"},
	{"ECC_UNCORRECTABLE", "ecc_volatile", ClassResetGPU,
		"uncorrectable memory errors since the driver loaded",
		"reset the GPU (row remapping takes effect at the reset); if they come back, contact the vendor"},
	{"ROW_REMAP_PENDING", "row_remap", ClassResetGPU,
		"a row remapping or a page retirement waits for the next GPU reset",
		"reset the GPU with no process on it"},
	{"ROW_REMAP_FAILED", "row_remap", ClassContactVendor,
		"the GPU has no spare row left to remap a failing one to",
		"take the GPU out of service and contact the vendor for a replacement"},
	{"NVLINK_DOWN", "nvlinks", ClassCheckHardware,
		"fewer NVLinks are active than the GPU model has",
		"reset the GPU, then reboot; links still down need the NVLink bridges, baseboard or NVSwitches checked"},
	{"PCIE_DEGRADED", "pcie_link", ClassCheckHardware,
		"a GPU's PCIe link trained narrower or slower than it can run",
		"reboot; a link still degraded needs the GPU reseated and its riser or cable checked"},
	{"THROTTLED", "throttle", ClassCheckHardware,
		"a GPU's clocks are held down by heat, a power brake or a hardware slowdown",
		"check the node's cooling, fans and power supplies, and the BMC's event log"},
	{"IB_PORT_DOWN", "ib_ports", ClassCheckHardware,
		"an InfiniBand port is not active, runs below the expected rate, or is missing",
		"check the cable and the switch port (ibstat, the fabric manager's log)"},
	{"SWAP_ON", "swap", ClassFixConfig,
		"swap is on",
		"swapoff -a and remove swap from /etc/fstab"},
	{"NCCL_TOPO_MISSING", "nccl_topo", ClassFixConfig,
		"the NCCL topology file the config names is missing or does not fit the node",
		"install the topology file for this node model (gpuprep-gres can write it)"},
	{"CMDQV_MISSING", "cmdqv", ClassFixConfig,
		"an arm64 VM without the SMMU CMDQV driver: its SMMU commands trap to the hypervisor",
		"load the tegra241_cmdqv module (a newer guest kernel has it)"},
	{"XID_UNKNOWN", "xid", ClassInvestigate,
		"kernel log records were lost before gpuprep read them: Xids in them are unknown",
		"read the node's kernel log for NVRM lines; find what floods the log"},
	appJobsCode,
	{"PROCESS_LEFT", "leftover_processes", ClassInvestigate,
		"a job's process still holds its GPU after the job",
		"find the process (nvidia-smi), kill it; a process that cannot die needs a GPU reset or a reboot"},
	{"EXTERNAL_FAILED", "external", ClassInvestigate,
		"the site's external health command failed",
		"read its output in gpuprep's log"},
	{probe.CodeProbeFailed, "probe", ClassInvestigate,
		"a speed probe (gpuprep-health --probe) could not run on a GPU: a CUDA error, or the GPU could not be opened",
		"read the verdict (gpuprep-health --probe-status) and the log; a GPU CUDA cannot open needs a reset or a reboot"},
	{probe.CodePCIeSlow, "probe", ClassCheckHardware,
		"host-to-device or device-to-host copies from pinned memory on the GPU's NUMA node ran below the floor for its PCIe link",
		"look at the link's generation and width during the copy in the verdict; reseat the GPU, check its riser, retimer or cable and the BIOS's PCIe settings, then probe again"},
	{probe.CodeHBMSlow, "probe", ClassInvestigate,
		"a copy within the GPU's memory ran below the floor for its model: memory clocks held down, heat, or a faulty GPU",
		"check the memory clock and temperature in the verdict and the throttle reasons; reset the GPU and probe again; if it stays slow, contact the vendor"},
	{probe.CodeComputeSlow, "probe", ClassInvestigate,
		"an FP32 FMA kernel on every SM ran below the floor: clocks held low (power, heat, a locked clock) or SMs doing less than their clock allows",
		"check the SM clock and power during the probe in the verdict, the throttle reasons and the locked clocks; reset the GPU and probe again"},
	{probe.CodeP2PSlow, "probe", ClassCheckHardware,
		"a copy between two GPUs with peer access ran below the floor for their NVLinks",
		"check the NVLinks (nvidia-smi nvlink -s) and the fabric manager; reset the GPUs, then reboot; links still slow need the baseboard or NVSwitches checked"},
	{probe.CodeP2PNoPeer, "probe", ClassFixConfig,
		"two GPUs with NVLinks cannot use peer access: copies between them go through host memory",
		"start the fabric manager (NVSwitch systems), check nvidia-smi topo -p2p r, and the IOMMU and ACS settings; then probe again"},
	{probetools.CodeDCGMDiagFailed, "probe", ClassInvestigate,
		"a test of DCGM's diagnostic (dcgmi diag -r 2, run with the probes) failed on a GPU",
		"read the test's message in the verdict's tools section; DCGM's documentation of the test says what to do"},
	{probetools.CodeAllReduceSlow, "probe", ClassCheckHardware,
		"nccl-tests' all_reduce_perf over the node's GPUs (run with the probes) moved less than the floor at 16 GiB",
		"check the NVLinks and NVSwitches (nvidia-smi nvlink -s, the fabric manager), then probe again"},
	{probetools.CodeAllReduceWrong, "probe", ClassContactVendor,
		"nccl-tests' all_reduce_perf found wrong values: data is corrupted on the way between GPUs",
		"take the node out of service; run the vendor's diagnostics and contact the vendor"},
	{probetools.CodeIBLoopbackSlow, "probe", ClassCheckHardware,
		"an HCA's ib_write_bw loopback (run with the probes) moved less than the floor",
		"check the HCA's PCIe link and firmware (ibstat, mlxlink), then probe again"},
	{CodeProbeUnknown, "probe", ClassNone,
		"the GPUs' speed is unknown: the last probe's verdict is too old ([health] probe_max_age), from another boot or driver, or the probe found the GPUs busy",
		"run gpuprep-health --probe on the idle node (or enable the gpuprep-probe timer, or [health] probe_every)"},
}

// recoveryCodes are the codes of the recovery action the driver asks for
// (NVML's GPU_RECOVERY_ACTION).
var recoveryCodes = map[gpu.RecoveryAction]Code{
	gpu.RecoveryGPUReset: {"RECOVERY_GPU_RESET", "xid", ClassResetGPU,
		"the driver asks for a GPU reset", "reset the GPU with no process on it"},
	gpu.RecoveryNodeReboot: {"RECOVERY_NODE_REBOOT", "xid", ClassReboot,
		"the driver asks for a node reboot", "reboot the node"},
	gpu.RecoveryDrainP2P: {"RECOVERY_DRAIN_P2P", "xid", ClassResetGPU,
		"the driver asks for peer-to-peer traffic to stop, then a reset", "let the jobs end, then reset the GPU"},
	gpu.RecoveryDrainAndReset: {"RECOVERY_DRAIN_AND_RESET", "xid", ClassResetGPU,
		"the driver asks for the GPU to be drained, then reset", "let the jobs end, then reset the GPU"},
	gpu.RecoveryRecoverIMEXDomain: {"RECOVERY_IMEX_DOMAIN", "xid", ClassReboot,
		"the driver asks for the GPU's IMEX domain to be recovered", "restart the IMEX domain's daemons as NVIDIA's IMEX guide says, else reboot"},
	gpu.RecoveryBusReset: {"RECOVERY_BUS_RESET", "xid", ClassReboot,
		"the driver asks for a PCIe bus reset", "reboot the node"},
	gpu.RecoverySystemReboot: {"RECOVERY_SYSTEM_REBOOT", "xid", ClassReboot,
		"the driver asks for the whole system to be rebooted", "reboot the node"},
}

// recoveryCode is the code of recovery action a; one NVML added after
// this table asks for something gpuprep does not know.
func recoveryCode(a gpu.RecoveryAction) Code {
	if c, ok := recoveryCodes[a]; ok {
		return c
	}
	return unknownRecovery
}

// unknownRecovery is the code of a recovery action NVML added after
// recoveryCodes.
var unknownRecovery = Code{"RECOVERY_UNKNOWN", "xid", ClassInvestigate,
	"the driver asks for a recovery action gpuprep does not know", "read NVML's documentation of the action the reason names"}

// unreadableCode is the code of a check whose fact could not be read.
func unreadableCode(check string) Code {
	return Code{strings.ToUpper(check) + "_UNREADABLE", check, ClassInvestigate,
		"gpuprep could not read what the " + check + " check judges",
		"read the error in gpuprep's log; a GPU NVML cannot read often needs a reset or a reboot"}
}

// defaultCode is check's first code in checkCodes.
func defaultCode(check string) Code {
	for _, c := range checkCodes {
		if c.Check == check {
			return c
		}
	}
	return Code{strings.ToUpper(check) + "_FAILED", check, ClassInvestigate, "the " + check + " check failed", "read the reason"}
}

// CodeOf is the code called name ("XID79", "PCIE_DEGRADED"), wherever it
// is kept.
func CodeOf(name string) (Code, bool) {
	for _, c := range checkCodes {
		if c.Name == name {
			return c, true
		}
	}
	for _, c := range recoveryCodes {
		if c.Name == name {
			return c, true
		}
	}
	if name == unknownRecovery.Name {
		return unknownRecovery, true
	}
	if n, ok := strings.CutPrefix(name, "XID"); ok {
		if x, err := strconv.Atoi(n); err == nil && strconv.Itoa(x) == n {
			return xidCode(x), true
		}
	}
	if check, ok := strings.CutSuffix(name, "_UNREADABLE"); ok {
		return unreadableCode(strings.ToLower(check)), true
	}
	return Code{}, false
}

// Explain is what gpuprep-health --explain prints for a code: what it
// means, what to do, its action class and its check; ok false for a name
// no failure carries.
func Explain(name string) (string, bool) {
	c, ok := CodeOf(strings.ToUpper(strings.TrimSpace(name)))
	if !ok {
		return "", false
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s (check %s)\nmeans:  %s\naction: %s\ndo:     %s\n", c.Name, c.Check, c.Means, c.Action, c.Do)
	if x, isXID := strings.CutPrefix(c.Name, "XID"); isXID {
		fmt.Fprintf(&b, "source: %s (read %s); Xid %s\n", xidCatalogSource, xidCatalogRead, x)
	}
	return b.String(), true
}

// Codes lists every code with a fixed name (the Xids' are in XIDCatalog).
func Codes() []Code {
	out := slices.Clone(checkCodes)
	for _, c := range recoveryCodes {
		out = append(out, c)
	}
	out = append(out, unknownRecovery)
	slices.SortFunc(out, func(a, b Code) int { return strings.Compare(a.Name, b.Name) })
	return out
}
