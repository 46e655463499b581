package health

import (
	"fmt"
	"slices"
)

// The Xids of NVIDIA's Xid catalog for Ampere and newer GPUs (A100, H100,
// B100, GB200), with the catalog's immediate action (what gets the node
// back into service) and investigatory action (what to do when the Xid
// comes back), as NVIDIA names its buckets; the Xids it lists as unused
// are left out. Where a driver of the R565 branch or later follows an
// Xid with an Xid 154, its recovery action (NVML's, read by the xid
// check) says what to do more precisely than the catalog.
const (
	xidCatalogSource = "NVIDIA, Analyzing Xid Errors with the Xid Catalog, https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html (Xid-Catalog.xlsx)"
	xidCatalogRead   = "2026-12-05"
)

// XIDEntry is one Xid of NVIDIA's catalog.
type XIDEntry struct {
	XID int `json:"xid"`
	// Name is a few words of what it is (gpuprep's, not NVIDIA's text).
	Name string `json:"name"`
	// Immediate and Investigate are the catalog's buckets ("RESET_GPU",
	// "RESTART_BM", "WORKFLOW_XID_48"; "-" where it gives none).
	Immediate   string `json:"immediate"`
	Investigate string `json:"investigate"`
}

var xidCatalog = []XIDEntry{
	{8, "GPU idle/watchdog timeout (channel stalled)", "RESTART_APP", "CONTACT_SUPPORT"},
	{11, "bad/corrupt push buffer (GR missing HW)", "RESTART_APP", "CHECK_APP/CUDA"},
	{13, "graphics/compute engine exception (SM fault)", "RESTART_APP", "WORKFLOW_XID_13"},
	{14, "fake/injected test error", "IGNORE", "CONTACT_SUPPORT"},
	{25, "illegal notify in push buffer", "RESTART_APP", "CHECK_APP/CUDA"},
	{31, "GPU MMU page fault", "RESTART_APP", "WORKFLOW_XID_31"},
	{32, "PBDMA fault on host command stream", "RESTART_APP", "CHECK_APP/CUDA"},
	{37, "FECS firmware: unimplemented method", "IGNORE", "CHECK_APP/CUDA"},
	{38, "FECS firmware watchdog timeout", "IGNORE", "CONTACT_SUPPORT"},
	{39, "copy engine 0 exception", "RESTART_APP", "CONTACT_SUPPORT"},
	{40, "copy engine 1 exception", "RESTART_APP", "CONTACT_SUPPORT"},
	{41, "copy engine 2 exception", "RESTART_APP", "CONTACT_SUPPORT"},
	{43, "channel reset after app fault (GPU healthy)", "IGNORE", "CONTACT_SUPPORT"},
	{44, "GR fault during context switch", "IGNORE", "CONTACT_SUPPORT"},
	{45, "preemptive channel teardown (follows other error/abort)", "WORKFLOW_XID_45", "RESTART_FM alone, else IGNORE"},
	{46, "GPU timeout, stopped processing", "RESET_GPU", "CONTACT_SUPPORT"},
	{48, "uncorrectable (double-bit) ECC error", "WORKFLOW_XID_48", "WORKFLOW_XID_48"},
	{54, "aux power cable not connected", "CHECK_MECHANICALS", "CONTACT_SUPPORT"},
	{60, "SEC2 (video processor) exception", "RESTART_APP", "INVESTIGATE_SW"},
	{62, "internal microcontroller (PMU) halt", "RESET_GPU", "CONTACT_SUPPORT"},
	{63, "row-remap / page-retire recorded", "IGNORE", "IGNORE"},
	{64, "row-remap / page-retire failed", "RESET_GPU", "CONTACT_SUPPORT"},
	{66, "driver register access violation (FECS)", "IGNORE", "INVESTIGATE_SW"},
	{67, "driver verification violation (FECS)", "IGNORE", "CONTACT_SUPPORT"},
	{68, "NVDEC0 video decoder exception", "RESTART_APP", "CONTACT_SUPPORT"},
	{69, "graphics engine class error", "RESTART_APP", "CHECK_APP/CUDA"},
	{70, "copy engine 3 exception", "RESTART_APP", "CONTACT_SUPPORT"},
	{71, "copy engine 4 exception", "RESTART_APP", "CONTACT_SUPPORT"},
	{72, "copy engine 5 exception", "RESTART_APP", "CONTACT_SUPPORT"},
	{74, "NVLink error", "WORKFLOW_NVLINK_ERR", "CONTACT_SUPPORT"},
	{75, "copy engine 6 exception", "RESTART_APP", "CONTACT_SUPPORT"},
	{76, "copy engine 7 exception", "RESTART_APP", "CONTACT_SUPPORT"},
	{77, "copy engine 8 exception", "RESTART_APP", "CONTACT_SUPPORT"},
	{78, "vGPU failed to start", "UPDATE_SWFW", "UPDATE_SWFW"},
	{79, "GPU fell off the bus (PCIe lost)", "RESTART_BM", "CONTACT_SUPPORT"},
	{80, "push buffer CRC mismatch", "RESTART_APP", "CHECK_APP/CUDA"},
	{82, "NVJPG0 JPEG engine error", "RESTART_APP", "CONTACT_SUPPORT"},
	{83, "NVDEC1 error", "RESTART_APP", "CONTACT_SUPPORT"},
	{84, "NVDEC2 error", "RESTART_APP", "CONTACT_SUPPORT"},
	{85, "copy engine 9 exception", "RESTART_APP", "CONTACT_SUPPORT"},
	{86, "optical flow accelerator (OFA0) exception", "RESTART_APP", "CONTACT_SUPPORT"},
	{88, "NVDEC3 error", "RESTART_APP", "CONTACT_SUPPORT"},
	{89, "NVDEC4 error", "RESTART_APP", "CONTACT_SUPPORT"},
	{92, "excessive single-bit ECC rate", "IGNORE", "CONTACT_SUPPORT"},
	{93, "InfoROM wear limit reached (non-fatal)", "IGNORE", "CONTACT_SUPPORT"},
	{94, "contained memory error (one app)", "RESTART_APP", "IGNORE (sympathetic)"},
	{95, "uncontained memory error (multi-app)", "RESET_GPU", "IGNORE (sympathetic)"},
	{96, "NVDEC5 error", "RESTART_APP", "CONTACT_SUPPORT"},
	{97, "NVDEC6 error", "RESTART_APP", "CONTACT_SUPPORT"},
	{98, "NVDEC7 error", "RESTART_APP", "CONTACT_SUPPORT"},
	{99, "NVJPG1 error", "RESTART_APP", "CONTACT_SUPPORT"},
	{100, "NVJPG2 error", "RESTART_APP", "CONTACT_SUPPORT"},
	{101, "NVJPG3 error", "RESTART_APP", "CONTACT_SUPPORT"},
	{102, "NVJPG4 error", "RESTART_APP", "CONTACT_SUPPORT"},
	{103, "NVJPG5 error", "RESTART_APP", "CONTACT_SUPPORT"},
	{104, "NVJPG6 error", "RESTART_APP", "CONTACT_SUPPORT"},
	{105, "NVJPG7 error", "RESTART_APP", "CONTACT_SUPPORT"},
	{106, "SMBPBI test message", "IGNORE", "IGNORE"},
	{107, "SMBPBI test message (silent)", "IGNORE", "IGNORE"},
	{108, "NVLink remote translation error (listed unused)", "IGNORE", "XID_137_FLOW"},
	{109, "context switch timeout", "RESET_GPU", "CONTACT_SUPPORT"},
	{110, "security fault", "RESET_GPU", "INVESTIGATE_SW"},
	{119, "GSP RPC timeout", "RESET_GPU", "INVESTIGATE_SW"},
	{120, "GSP firmware error", "RESET_GPU", "INVESTIGATE_SW"},
	{121, "C2C (Grace<->GPU) link corrected errors", "IGNORE", "CONTACT_SUPPORT"},
	{126, "copy engine 10 exception", "RESTART_APP", "CONTACT_SUPPORT"},
	{127, "copy engine 11 exception", "RESTART_APP", "CONTACT_SUPPORT"},
	{128, "copy engine 12 exception", "RESTART_APP", "CONTACT_SUPPORT"},
	{129, "copy engine 13 exception", "RESTART_APP", "CONTACT_SUPPORT"},
	{130, "copy engine 14 exception", "RESTART_APP", "CONTACT_SUPPORT"},
	{131, "copy engine 15 exception", "RESTART_APP", "CONTACT_SUPPORT"},
	{132, "copy engine 16 exception", "RESTART_APP", "CONTACT_SUPPORT"},
	{133, "copy engine 17 exception", "RESTART_APP", "CONTACT_SUPPORT"},
	{134, "copy engine 18 exception", "RESTART_APP", "CONTACT_SUPPORT"},
	{135, "copy engine 19 exception", "RESTART_APP", "CONTACT_SUPPORT"},
	{136, "NVLink ALI link training failed", "RESET_GPU", "INVESTIGATE_LINK_SI"},
	{137, "NVLink privilege (illegal P2P) error", "IGNORE", "XID_137_FLOW"},
	{139, "OFA1 error", "RESTART_APP", "CONTACT_SUPPORT"},
	{140, "uncorrectable ECC escaped retirement", "RESET_GPU", "CONTACT_SUPPORT"},
	{141, "CUDA fast-path error", "IGNORE", "CONTACT_SUPPORT"},
	{142, "NVENC3 encoder error", "CONTACT_SUPPORT", "-"},
	{143, "GPU initialization failure", "RESET_GPU", "CONTACT_SUPPORT"},
	{144, "NVLink5 SAW error", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR"},
	{145, "NVLink5 RLW error", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR"},
	{146, "NVLink5 TLW error", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR"},
	{147, "NVLink5 TREX error", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR"},
	{148, "NVLink5 NVLPW_CTRL error", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR"},
	{149, "NVLink5 NETIR (link/port) error", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR"},
	{150, "NVLink5 MSE error", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR"},
	{151, "confidential-compute key rotation error", "RESTART_VM", "CONTACT_SUPPORT"},
	{152, "DLA SMMU error", "IGNORE", "CONTACT_SUPPORT"},
	{153, "DLA timeout", "IGNORE", "CONTACT_SUPPORT"},
	{154, "GPU recovery action changed (summary)", "XID_154", "-"},
	{155, "NVLink SW-defined (intentional) link down", "RESET_GPU", "INVESTIGATE_SW_USER"},
	{156, "resource retirement event", "RESET_GPU", "IGNORE"},
	{157, "resource retirement failed (no spares)", "IGNORE", "CONTACT_SUPPORT"},
	{158, "GPU fatal timeout", "RESET_GPU", "CONTACT_SUPPORT"},
	{159, "C2C CHI non-data error", "CHECK_UVM", "SYMPATHETIC_REPORT_SOLO"},
	{160, "channel retirement event", "IGNORE", "INVESTIGATE_SW"},
	{161, "channel retirement failure", "IGNORE", "INVESTIGATE_SW"},
	{162, "power-smoothing HW re-engaged", "-", "-"},
	{163, "power-smoothing HW disengaged", "-", "-"},
	{164, "power-smoothing HW low lifetime", "-", "-"},
	{165, "power-smoothing HW lifetime exhausted", "-", "-"},
	{166, "CC traffic before NVLink encryption set up", "-", "-"},
	{167, "PCIe fatal timeout", "-", "-"},
	{168, "errors in WPR / reduced GPU memory capacity", "-", "-"},
	{169, "SEC2 microcontroller halt", "-", "-"},
	{170, "NVLink interrupt in CC mode", "-", "-"},
	{171, "uncorrectable DRAM error detail (companion to 48)", "-", "-"},
	{172, "uncorrectable SRAM error detail (companion to 48)", "-", "-"},
}

// XIDCatalog is the catalog's Xids, ascending.
func XIDCatalog() []XIDEntry { return slices.Clone(xidCatalog) }

// bucketActions are gpuprep's action classes for the catalog's immediate
// buckets. A workflow bucket that needs the Xid's message or its company
// decoded (NVLink errors, a lone Xid 45) is investigate; Xid 48's workflow
// resets the GPU either way; CHECK_UVM resets it where UVM is in use,
// which is every CUDA node.
var bucketActions = map[string]ActionClass{
	"IGNORE": ClassNone, "RESTART_APP": ClassRestartApp, "RESET_GPU": ClassResetGPU,
	"RESTART_BM": ClassReboot, "RESTART_VM": ClassReboot, "CONTACT_SUPPORT": ClassContactVendor,
	"CHECK_MECHANICALS": ClassCheckHardware, "UPDATE_SWFW": ClassUpdateSoftware,
	"CHECK_UVM": ClassResetGPU, "WORKFLOW_XID_48": ClassResetGPU,
}

// catalogEntry is Xid n's entry in the catalog; ok false for one it does
// not list.
func catalogEntry(n int) (e XIDEntry, ok bool) {
	i, found := slices.BinarySearchFunc(xidCatalog, n, func(e XIDEntry, n int) int { return e.XID - n })
	if !found {
		return XIDEntry{}, false
	}
	return xidCatalog[i], true
}

// xidCode is the code of Xid n: XID<n>, its action from the catalog's
// immediate bucket, investigate for an Xid the catalog does not list.
func xidCode(n int) Code {
	name := fmt.Sprintf("XID%d", n)
	e, found := catalogEntry(n)
	if !found {
		return Code{name, "xid", ClassInvestigate,
			fmt.Sprintf("Xid %d, which NVIDIA's Xid catalog for Ampere and newer GPUs does not list", n),
			"read the Xid's line in the kernel log and NVIDIA's Xid documentation for older GPUs"}
	}
	act, ok := bucketActions[e.Immediate]
	if !ok {
		act = ClassInvestigate
	}
	do := "NVIDIA's immediate action " + e.Immediate
	if e.Immediate == "-" {
		do = "NVIDIA's catalog gives no action: read the Xid's line and NVIDIA's description"
	}
	if e.Investigate != "-" {
		do += "; if it comes back: " + e.Investigate
	}
	return Code{name, "xid", act, fmt.Sprintf("Xid %d: %s", n, e.Name), do}
}
