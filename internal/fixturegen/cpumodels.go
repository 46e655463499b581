package fixturegen

// cacheSpec is one cache level of a CPU model.
type cacheSpec struct {
	Level int
	Type  string // Data, Instruction, Unified
	KiB   int
	Ways  int
	// Cores is how many consecutive cores of a socket share it; 0: the
	// whole socket.
	Cores int
}

// idleState is one cpuidle state.
type idleState struct {
	Name, Desc         string
	Latency, Residency int // µs
}

// cpuModel is what the generator needs to know about a CPU model beyond the
// shape: /proc/cpuinfo identity, caches, frequencies and power management.
type cpuModel struct {
	Family, Model, Stepping int
	Microcode               string
	Flags                   string
	Bugs                    string
	AddressSizes            string
	Caches                  []cacheSpec
	BaseKHz, MaxKHz, MinKHz int
	// FreqDriver is the cpufreq driver: intel_pstate (with EPP),
	// acpi-cpufreq, cppc_cpufreq.
	FreqDriver string
	Governors  string // scaling_available_governors
	Governor   string // default scaling_governor
	IdleDriver string
	Idle       []idleState
	// Arm identification (/proc/cpuinfo of arm64).
	ArmImplementer, ArmPart, ArmFeatures string
}

const intelFlags = "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi mmx fxsr sse sse2 ss ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc art arch_perfmon pebs bts rep_good nopl xtopology nonstop_tsc cpuid aperfmperf tsc_known_freq pni pclmulqdq dtes64 monitor ds_cpl vmx smx est tm2 ssse3 sdbg fma cx16 xtpr pdcm pcid dca sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand lahf_lm abm 3dnowprefetch cpuid_fault epb cat_l3 cat_l2 cdp_l3 invpcid_single intel_ppin cdp_l2 ssbd mba ibrs ibpb stibp ibrs_enhanced tpr_shadow flexpriority ept vpid ept_ad fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid cqm rdt_a avx512f avx512dq rdseed adx smap avx512ifma clflushopt clwb intel_pt avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves cqm_llc cqm_occup_llc cqm_mbm_total cqm_mbm_local split_lock_detect avx_vnni avx512_bf16 wbnoinvd dtherm ida arat pln pts hfi vnmi avx512vbmi umip pku ospke waitpkg avx512_vbmi2 gfni vaes vpclmulqdq avx512_vnni avx512_bitalg tme avx512_vpopcntdq la57 rdpid bus_lock_detect cldemote movdiri movdir64b enqcmd fsrm md_clear serialize tsxldtrk pconfig arch_lbr ibt amx_bf16 avx512_fp16 amx_tile amx_int8 flush_l1d arch_capabilities"

const intelVMFlags = "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ss ht syscall nx pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology nonstop_tsc cpuid tsc_known_freq pni pclmulqdq ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand hypervisor lahf_lm abm 3dnowprefetch cpuid_fault ssbd ibrs ibpb stibp ibrs_enhanced fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid avx512f avx512dq rdseed adx smap avx512ifma clflushopt clwb avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves avx_vnni avx512_bf16 wbnoinvd arat avx512vbmi umip pku ospke avx512_vbmi2 gfni vaes vpclmulqdq avx512_vnni avx512_bitalg avx512_vpopcntdq rdpid bus_lock_detect cldemote movdiri movdir64b fsrm md_clear serialize tsxldtrk amx_bf16 avx512_fp16 amx_tile amx_int8 flush_l1d arch_capabilities"

const amdRomeFlags = "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ht syscall nx mmxext fxsr_opt pdpe1gb rdtscp lm constant_tsc rep_good nopl nonstop_tsc cpuid extd_apicid aperfmperf rapl pni pclmulqdq monitor ssse3 fma cx16 sse4_1 sse4_2 x2apic movbe popcnt aes xsave avx f16c rdrand lahf_lm cmp_legacy svm extapic cr8_legacy abm sse4a misalignsse 3dnowprefetch osvw ibs skinit wdt tce topoext perfctr_core perfctr_nb bpext perfctr_llc mwaitx cpb cat_l3 cdp_l3 hw_pstate ssbd mba ibrs ibpb stibp vmmcall fsgsbase bmi1 avx2 smep bmi2 cqm rdt_a rdseed adx smap clflushopt clwb sha_ni xsaveopt xsavec xgetbv1 xsaves cqm_llc cqm_occup_llc cqm_mbm_total cqm_mbm_local clzero irperf xsaveerptr rdpru wbnoinvd amd_ppin arat npt lbrv svm_lock nrip_save tsc_scale vmcb_clean flushbyasid decodeassists pausefilter pfthreshold avic v_vmsave_vmload vgif v_spec_ctrl umip rdpid overflow_recov succor smca sme sev sev_es"

const cascadeLakeFlags = "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi mmx fxsr sse sse2 ss ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc art arch_perfmon pebs bts rep_good nopl xtopology nonstop_tsc cpuid aperfmperf pni pclmulqdq dtes64 monitor ds_cpl vmx smx est tm2 ssse3 sdbg fma cx16 xtpr pdcm pcid dca sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand lahf_lm abm 3dnowprefetch cpuid_fault epb cat_l3 cdp_l3 invpcid_single intel_ppin ssbd mba ibrs ibpb stibp ibrs_enhanced tpr_shadow vnmi flexpriority ept vpid ept_ad fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid cqm mpx rdt_a avx512f avx512dq rdseed adx smap clflushopt clwb intel_pt avx512cd avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves cqm_llc cqm_occup_llc cqm_mbm_total cqm_mbm_local dtherm ida arat pln pts pku ospke avx512_vnni md_clear flush_l1d arch_capabilities"

const broadwellFlags = "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi mmx fxsr sse sse2 ss ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc arch_perfmon pebs bts rep_good nopl xtopology nonstop_tsc aperfmperf eagerfpu pni pclmulqdq dtes64 monitor ds_cpl vmx smx est tm2 ssse3 sdbg fma cx16 xtpr pdcm pcid dca sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand lahf_lm abm 3dnowprefetch epb cat_l3 cdp_l3 intel_ppin intel_pt ssbd ibrs ibpb stibp tpr_shadow vnmi flexpriority ept vpid fsgsbase tsc_adjust bmi1 hle avx2 smep bmi2 erms invpcid rtm cqm rdt_a rdseed adx smap xsaveopt cqm_llc cqm_occup_llc cqm_mbm_total cqm_mbm_local dtherm ida arat pln pts md_clear spec_ctrl intel_stibp flush_l1d"

const piledriverFlags = "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ht syscall nx mmxext fxsr_opt pdpe1gb rdtscp lm constant_tsc rep_good nopl nonstop_tsc cpuid extd_apicid amd_dcm aperfmperf pni pclmulqdq monitor ssse3 fma cx16 sse4_1 sse4_2 popcnt aes xsave avx f16c lahf_lm cmp_legacy svm extapic cr8_legacy abm sse4a misalignsse 3dnowprefetch osvw ibs xop skinit wdt fma4 tce nodeid_msr tbm topoext perfctr_core perfctr_nb cpb hw_pstate ssbd ibpb vmmcall bmi1 arat npt lbrv svm_lock nrip_save tsc_scale vmcb_clean flushbyasid decodeassists pausefilter pfthreshold"

var intelIdle = []idleState{
	{"POLL", "CPUIDLE CORE POLL IDLE", 0, 0},
	{"C1", "MWAIT 0x00", 2, 2},
	{"C1E", "MWAIT 0x01", 4, 4},
	{"C6", "MWAIT 0x20", 170, 650},
}

const (
	intelGovernors = "performance powersave"
	acpiGovernors  = "conservative ondemand userspace powersave performance schedutil"
)

// cpuModels are the CPU models the shapes use, by /proc/cpuinfo model name.
var cpuModels = map[string]cpuModel{
	"Intel(R) Xeon(R) Platinum 8480C": {
		Family: 6, Model: 143, Stepping: 8, Microcode: "0x2b000590",
		Flags: intelFlags, Bugs: "spectre_v1 spectre_v2 spec_store_bypass swapgs eibrs_pbrsb bhi",
		AddressSizes: "46 bits physical, 57 bits virtual",
		Caches: []cacheSpec{
			{1, "Data", 48, 12, 1}, {1, "Instruction", 32, 8, 1},
			{2, "Unified", 2048, 16, 1}, {3, "Unified", 107520, 15, 0},
		},
		BaseKHz: 2000000, MaxKHz: 3800000, MinKHz: 800000,
		FreqDriver: "intel_pstate", Governors: intelGovernors, Governor: "powersave",
		IdleDriver: "intel_idle", Idle: intelIdle,
	},
	"Intel(R) Xeon(R) Platinum 8480+": {
		Family: 6, Model: 143, Stepping: 8, Microcode: "0xffffffff",
		Flags: intelVMFlags, Bugs: "spectre_v1 spectre_v2 spec_store_bypass swapgs eibrs_pbrsb bhi",
		AddressSizes: "52 bits physical, 57 bits virtual",
		Caches: []cacheSpec{
			{1, "Data", 48, 12, 1}, {1, "Instruction", 32, 8, 1},
			{2, "Unified", 2048, 16, 1}, {3, "Unified", 107520, 15, 0},
		},
		BaseKHz: 2000000, MaxKHz: 2000000, MinKHz: 2000000,
	},
	"INTEL(R) XEON(R) PLATINUM 8570": {
		Family: 6, Model: 207, Stepping: 2, Microcode: "0x21000230",
		Flags: intelFlags, Bugs: "spectre_v1 spectre_v2 spec_store_bypass swapgs eibrs_pbrsb bhi",
		AddressSizes: "46 bits physical, 57 bits virtual",
		Caches: []cacheSpec{
			{1, "Data", 48, 12, 1}, {1, "Instruction", 32, 8, 1},
			{2, "Unified", 2048, 16, 1}, {3, "Unified", 307200, 15, 0},
		},
		BaseKHz: 2100000, MaxKHz: 4000000, MinKHz: 800000,
		FreqDriver: "intel_pstate", Governors: intelGovernors, Governor: "powersave",
		IdleDriver: "intel_idle", Idle: intelIdle,
	},
	"AMD EPYC 7742 64-Core Processor": {
		Family: 23, Model: 49, Stepping: 0, Microcode: "0x830107a",
		Flags: amdRomeFlags, Bugs: "sysret_ss_attrs spectre_v1 spectre_v2 spec_store_bypass retbleed smt_rsb srso",
		AddressSizes: "43 bits physical, 48 bits virtual",
		Caches: []cacheSpec{
			{1, "Data", 32, 8, 1}, {1, "Instruction", 32, 8, 1},
			{2, "Unified", 512, 8, 1}, {3, "Unified", 16384, 16, 4}, // L3 per 4-core CCX
		},
		BaseKHz: 2250000, MaxKHz: 2250000, MinKHz: 1500000,
		FreqDriver: "acpi-cpufreq", Governors: acpiGovernors, Governor: "ondemand",
		IdleDriver: "acpi_idle",
		Idle: []idleState{
			{"POLL", "CPUIDLE CORE POLL IDLE", 0, 0},
			{"C1", "ACPI FFH MWAIT 0x0", 1, 2},
			{"C2", "ACPI IOPORT 0x414", 400, 800},
		},
	},
	"Neoverse-V2": {
		AddressSizes: "",
		Caches: []cacheSpec{
			{1, "Data", 64, 4, 1}, {1, "Instruction", 64, 4, 1},
			{2, "Unified", 1024, 8, 1}, {3, "Unified", 116736, 12, 0},
		},
		BaseKHz: 3375000, MaxKHz: 3438000, MinKHz: 81000,
		FreqDriver: "cppc_cpufreq", Governors: acpiGovernors, Governor: "schedutil",
		IdleDriver: "psci_idle",
		Idle: []idleState{
			{"WFI", "ARM WFI", 1, 1},
			{"cpuoff", "psci_idle", 2000, 5000},
		},
		ArmImplementer: "0x41", ArmPart: "0xd4f",
		ArmFeatures: "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs sb paca pacg dcpodp sve2 sveaes svepmull svebitperm svesha3 svesm4 flagm2 frint svei8mm svebf16 i8mm bf16 dgh bti",
	},
	"Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz": {
		Family: 6, Model: 85, Stepping: 7, Microcode: "0x5003604",
		Flags: cascadeLakeFlags, Bugs: "spectre_v1 spectre_v2 spec_store_bypass swapgs taa itlb_multihit mmio_stale_data retbleed eibrs_pbrsb gds bhi",
		AddressSizes: "46 bits physical, 48 bits virtual",
		Caches: []cacheSpec{
			{1, "Data", 32, 8, 1}, {1, "Instruction", 32, 8, 1},
			{2, "Unified", 1024, 16, 1}, {3, "Unified", 28160, 11, 0},
		},
		BaseKHz: 2100000, MaxKHz: 3900000, MinKHz: 800000,
		FreqDriver: "intel_pstate", Governors: intelGovernors, Governor: "powersave",
		IdleDriver: "intel_idle", Idle: intelIdle,
	},
	"Intel(R) Xeon(R) CPU E5-2620 v4 @ 2.10GHz": {
		Family: 6, Model: 79, Stepping: 1, Microcode: "0xb000040",
		Flags: broadwellFlags, Bugs: "cpu_meltdown spectre_v1 spectre_v2 spec_store_bypass l1tf mds swapgs taa itlb_multihit mmio_stale_data",
		AddressSizes: "46 bits physical, 48 bits virtual",
		Caches: []cacheSpec{
			{1, "Data", 32, 8, 1}, {1, "Instruction", 32, 8, 1},
			{2, "Unified", 256, 8, 1}, {3, "Unified", 20480, 20, 0},
		},
		BaseKHz: 2100000, MaxKHz: 3000000, MinKHz: 1200000,
		FreqDriver: "acpi-cpufreq", Governors: acpiGovernors, Governor: "ondemand",
		IdleDriver: "intel_idle",
		Idle: []idleState{
			{"POLL", "CPUIDLE CORE POLL IDLE", 0, 0},
			{"C1-BDW", "MWAIT 0x00", 2, 2},
			{"C1E-BDW", "MWAIT 0x01", 10, 20},
			{"C3-BDW", "MWAIT 0x10", 40, 100},
			{"C6-BDW", "MWAIT 0x20", 133, 400},
		},
	},
	// Piledriver: two cores per compute unit share its L1i and L2; each
	// 8-core die has an L3 and a NUMA node.
	"AMD Opteron(tm) Processor 6380": {
		Family: 21, Model: 2, Stepping: 0, Microcode: "0x600063e",
		Flags: piledriverFlags, Bugs: "fxsave_leak sysret_ss_attrs null_seg spectre_v1 spectre_v2 spec_store_bypass retbleed",
		AddressSizes: "48 bits physical, 48 bits virtual",
		Caches: []cacheSpec{
			{1, "Data", 16, 4, 1}, {1, "Instruction", 64, 2, 2},
			{2, "Unified", 2048, 16, 2}, {3, "Unified", 6144, 64, 8},
		},
		BaseKHz: 2500000, MaxKHz: 2500000, MinKHz: 1400000,
		FreqDriver: "acpi-cpufreq", Governors: acpiGovernors, Governor: "ondemand",
		IdleDriver: "acpi_idle",
		Idle: []idleState{
			{"POLL", "CPUIDLE CORE POLL IDLE", 0, 0},
			{"C1", "ACPI HLT", 1, 2},
			{"C2", "ACPI IOPORT 0x814", 100, 200},
		},
	},
	// Ampere Altra: Neoverse N1 cores, in pairs per cluster.
	"Neoverse-N1": {
		Caches: []cacheSpec{
			{1, "Data", 64, 4, 1}, {1, "Instruction", 64, 4, 1},
			{2, "Unified", 1024, 8, 1}, {3, "Unified", 32768, 16, 0},
		},
		BaseKHz: 3000000, MaxKHz: 3000000, MinKHz: 1000000,
		FreqDriver: "cppc_cpufreq", Governors: acpiGovernors, Governor: "schedutil",
		IdleDriver: "psci_idle",
		Idle: []idleState{
			{"WFI", "ARM WFI", 1, 1},
			{"cpuoff", "psci_idle", 300, 1000},
		},
		ArmImplementer: "0x41", ArmPart: "0xd0c",
		ArmFeatures: "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp ssbs",
	},
	// Cavium (Marvell) ThunderX2 CN9975: four threads per core.
	"Cavium ThunderX2 CN9975": {
		Caches: []cacheSpec{
			{1, "Data", 32, 8, 1}, {1, "Instruction", 32, 8, 1},
			{2, "Unified", 256, 8, 1}, {3, "Unified", 32768, 16, 0},
		},
		BaseKHz: 2000000, MaxKHz: 2500000, MinKHz: 1000000,
		FreqDriver: "cppc_cpufreq", Governors: acpiGovernors, Governor: "schedutil",
		IdleDriver: "psci_idle",
		Idle: []idleState{
			{"WFI", "ARM WFI", 1, 1},
		},
		ArmImplementer: "0x43", ArmPart: "0x0af",
		ArmFeatures: "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics cpuid asimdrdm",
	},
}

// fallbackModel serves shapes with a CPU model not in cpuModels.
var fallbackModel = cpuModel{
	Family: 6, Model: 143, Stepping: 8, Microcode: "0x1", Flags: intelVMFlags,
	AddressSizes: "46 bits physical, 57 bits virtual",
	Caches: []cacheSpec{
		{1, "Data", 32, 8, 1}, {1, "Instruction", 32, 8, 1},
		{2, "Unified", 1024, 16, 1}, {3, "Unified", 32768, 16, 0},
	},
	BaseKHz: 2000000, MaxKHz: 3000000, MinKHz: 800000,
	FreqDriver: "acpi-cpufreq", Governors: acpiGovernors, Governor: "schedutil",
	IdleDriver: "acpi_idle",
	Idle:       []idleState{{"POLL", "CPUIDLE CORE POLL IDLE", 0, 0}, {"C1", "ACPI FFH MWAIT 0x0", 1, 2}},
}
