package fixturegen

import (
	"fmt"
	"strings"
)

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

func (l *layout) model() cpuModel {
	if m, ok := cpuModels[l.s.CPUModel]; ok {
		return m
	}
	return fallbackModel
}

func (l *layout) isArm() bool { return l.s.CPUVendor == "" }

const sysCPU = "sys/devices/system/cpu"

// writeCPUs writes /sys/devices/system/cpu and /sys/bus/cpu.
func writeCPUs(t *tree, l *layout) {
	all := cpuList(l.allCPUs())
	for _, f := range []string{"online", "possible", "present"} {
		t.line(sysCPU+"/"+f, all)
	}
	t.line(sysCPU+"/offline", "")
	t.line(sysCPU+"/isolated", "")
	t.line(sysCPU+"/kernel_max", "8191")
	if l.s.ThreadsPerCore > 1 {
		t.line(sysCPU+"/smt/active", "1")
		t.line(sysCPU+"/smt/control", "on")
	} else {
		t.line(sysCPU+"/smt/active", "0")
		t.line(sysCPU+"/smt/control", "notsupported")
	}
	for _, c := range l.CPUs {
		dir := fmt.Sprintf("%s/cpu%d", sysCPU, c.ID)
		t.link(fmt.Sprintf("sys/bus/cpu/devices/cpu%d", c.ID), dir)
		if c.ID != 0 || l.isArm() {
			t.line(dir+"/online", "1")
		}
		t.link(fmt.Sprintf("%s/node%d", dir, c.Node), fmt.Sprintf("%s/node%d", sysNode, c.Node))
		writeTopology(t, l, c, dir+"/topology")
		writeCaches(t, l, c, dir+"/cache")
	}
	if !l.s.NoCPUFreq {
		writeCPUFreq(t, l)
	}
	if !l.s.NoCPUIdle {
		writeCPUIdle(t, l)
	}
}

// set writes a mask file and its _list twin.
func set(t *tree, l *layout, p string, ids []int) {
	t.line(p, cpuMask(ids, l.nCPU()))
	t.line(p+"_list", cpuList(ids))
}

func writeTopology(t *tree, l *layout, c cpu, dir string) {
	core := l.coreCPUs(c.ID)
	pkg := l.socketCPUs(c.Socket)
	t.linef(dir+"/physical_package_id", "%d", c.Socket)
	t.linef(dir+"/core_id", "%d", c.Core)
	set(t, l, dir+"/core_cpus", core)
	set(t, l, dir+"/thread_siblings", core)
	set(t, l, dir+"/package_cpus", pkg)
	set(t, l, dir+"/core_siblings", pkg)
	// Clusters are cores sharing an L2: one core here.
	t.linef(dir+"/cluster_id", "%d", c.Socket*l.s.CoresPerSocket+c.Core)
	set(t, l, dir+"/cluster_cpus", core)
	if !l.isArm() { // die_* exist on x86 (and s390) only
		t.line(dir+"/die_id", "0")
		set(t, l, dir+"/die_cpus", pkg)
	}
}

func writeCaches(t *tree, l *layout, c cpu, dir string) {
	m := l.model()
	for i, cs := range m.Caches {
		idx := fmt.Sprintf("%s/index%d", dir, i)
		shared := l.coreGroupCPUs(c.ID, cs.Cores)
		t.linef(idx+"/level", "%d", cs.Level)
		t.line(idx+"/type", cs.Type)
		t.linef(idx+"/size", "%dK", cs.KiB)
		t.line(idx+"/coherency_line_size", "64")
		t.linef(idx+"/ways_of_associativity", "%d", cs.Ways)
		t.linef(idx+"/number_of_sets", "%d", cs.KiB*1024/64/cs.Ways)
		t.line(idx+"/physical_line_partition", "1")
		t.linef(idx+"/id", "%d", cacheID(l, c, cs))
		t.line(idx+"/shared_cpu_map", cpuMask(shared, l.nCPU()))
		t.line(idx+"/shared_cpu_list", cpuList(shared))
		if l.isArm() {
			t.line(idx+"/allocation_policy", "ReadWriteAllocate")
			t.line(idx+"/write_policy", "WriteBack")
		}
	}
}

// cacheID numbers caches like the kernel does on x86: per level, unique
// across the machine.
func cacheID(l *layout, c cpu, cs cacheSpec) int {
	switch {
	case cs.Cores == 0:
		return c.Socket
	case cs.Cores == 1:
		return c.Socket*l.s.CoresPerSocket + c.Core
	default:
		perSocket := (l.s.CoresPerSocket + cs.Cores - 1) / cs.Cores
		return c.Socket*perSocket + c.Core/cs.Cores
	}
}

// writeCPUFreq writes one cpufreq policy per CPU (as intel_pstate,
// acpi-cpufreq and cppc_cpufreq do), cpuN/cpufreq linking to it.
func writeCPUFreq(t *tree, l *layout) {
	m := l.model()
	for _, c := range l.CPUs {
		pol := fmt.Sprintf("%s/cpufreq/policy%d", sysCPU, c.ID)
		t.link(fmt.Sprintf("%s/cpu%d/cpufreq", sysCPU, c.ID), pol)
		t.linef(pol+"/affected_cpus", "%d", c.ID)
		t.linef(pol+"/related_cpus", "%d", c.ID)
		t.linef(pol+"/cpuinfo_min_freq", "%d", m.MinKHz)
		t.linef(pol+"/cpuinfo_max_freq", "%d", m.MaxKHz)
		t.line(pol+"/cpuinfo_transition_latency", "0")
		t.linef(pol+"/scaling_min_freq", "%d", m.MinKHz)
		t.linef(pol+"/scaling_max_freq", "%d", m.MaxKHz)
		t.linef(pol+"/scaling_cur_freq", "%d", m.BaseKHz)
		t.line(pol+"/scaling_driver", m.FreqDriver)
		t.line(pol+"/scaling_governor", m.Governor)
		t.line(pol+"/scaling_available_governors", m.Governors)
		t.line(pol+"/scaling_setspeed", "<unsupported>")
		switch m.FreqDriver {
		case "intel_pstate":
			t.linef(pol+"/base_frequency", "%d", m.BaseKHz)
			t.line(pol+"/energy_performance_preference", "balance_performance")
			t.line(pol+"/energy_performance_available_preferences",
				"default performance balance_performance balance_power power ")
		case "acpi-cpufreq":
			t.linef(pol+"/scaling_available_frequencies", "%d %d %d ", m.BaseKHz, (m.BaseKHz+m.MinKHz)/2, m.MinKHz)
			t.linef(pol+"/cpuinfo_cur_freq", "%d", m.BaseKHz)
		case "cppc_cpufreq":
			t.linef(pol+"/cpuinfo_cur_freq", "%d", m.BaseKHz)
		}
	}
	switch m.FreqDriver {
	case "intel_pstate":
		t.line(sysCPU+"/intel_pstate/status", "active")
		t.line(sysCPU+"/intel_pstate/no_turbo", "0")
		t.line(sysCPU+"/intel_pstate/max_perf_pct", "100")
		t.line(sysCPU+"/intel_pstate/min_perf_pct", "21")
		t.line(sysCPU+"/intel_pstate/hwp_dynamic_boost", "0")
	case "acpi-cpufreq":
		t.line(sysCPU+"/cpufreq/boost", "1")
	}
}

// writeCPUIdle writes the cpuidle driver and per-CPU states.
func writeCPUIdle(t *tree, l *layout) {
	m := l.model()
	t.line(sysCPU+"/cpuidle/current_driver", m.IdleDriver)
	t.line(sysCPU+"/cpuidle/current_governor", "menu")
	t.line(sysCPU+"/cpuidle/current_governor_ro", "menu")
	t.line(sysCPU+"/cpuidle/available_governors", "ladder menu teo ")
	for _, c := range l.CPUs {
		for k, st := range m.Idle {
			d := fmt.Sprintf("%s/cpu%d/cpuidle/state%d", sysCPU, c.ID, k)
			t.line(d+"/name", st.Name)
			t.line(d+"/desc", st.Desc)
			t.linef(d+"/latency", "%d", st.Latency)
			t.linef(d+"/residency", "%d", st.Residency)
			t.line(d+"/disable", "0")
		}
	}
}

// writeCPUInfo writes /proc/cpuinfo.
func writeCPUInfo(t *tree, l *layout) {
	m := l.model()
	var b strings.Builder
	if l.isArm() {
		for _, c := range l.CPUs {
			fmt.Fprintf(&b, "processor\t: %d\n", c.ID)
			b.WriteString("BogoMIPS\t: 2000.00\n")
			fmt.Fprintf(&b, "Features\t: %s\n", m.ArmFeatures)
			fmt.Fprintf(&b, "CPU implementer\t: %s\n", m.ArmImplementer)
			b.WriteString("CPU architecture: 8\n")
			b.WriteString("CPU variant\t: 0x0\n")
			fmt.Fprintf(&b, "CPU part\t: %s\n", m.ArmPart)
			b.WriteString("CPU revision\t: 0\n\n")
		}
		t.file("proc/cpuinfo", b.String())
		return
	}
	l3 := 0
	for _, cs := range m.Caches {
		if cs.Level == 3 {
			l3 = cs.KiB
		}
	}
	bogo := float64(m.BaseKHz) / 500.0
	for _, c := range l.CPUs {
		apic := c.Socket<<7 | c.Core<<1 | c.Thread
		if l.s.ThreadsPerCore == 1 {
			apic = c.Socket<<7 | c.Core
		}
		fmt.Fprintf(&b, "processor\t: %d\n", c.ID)
		fmt.Fprintf(&b, "vendor_id\t: %s\n", l.s.CPUVendor)
		fmt.Fprintf(&b, "cpu family\t: %d\n", m.Family)
		fmt.Fprintf(&b, "model\t\t: %d\n", m.Model)
		fmt.Fprintf(&b, "model name\t: %s\n", l.s.CPUModel)
		fmt.Fprintf(&b, "stepping\t: %d\n", m.Stepping)
		fmt.Fprintf(&b, "microcode\t: %s\n", m.Microcode)
		fmt.Fprintf(&b, "cpu MHz\t\t: %d.000\n", m.BaseKHz/1000)
		fmt.Fprintf(&b, "cache size\t: %d KB\n", l3)
		fmt.Fprintf(&b, "physical id\t: %d\n", c.Socket)
		fmt.Fprintf(&b, "siblings\t: %d\n", l.s.CoresPerSocket*l.s.ThreadsPerCore)
		fmt.Fprintf(&b, "core id\t\t: %d\n", c.Core)
		fmt.Fprintf(&b, "cpu cores\t: %d\n", l.s.CoresPerSocket)
		fmt.Fprintf(&b, "apicid\t\t: %d\n", apic)
		fmt.Fprintf(&b, "initial apicid\t: %d\n", apic)
		b.WriteString("fpu\t\t: yes\nfpu_exception\t: yes\n")
		if l.s.CPUVendor == "AuthenticAMD" {
			b.WriteString("cpuid level\t: 16\n")
		} else {
			b.WriteString("cpuid level\t: 32\n")
		}
		b.WriteString("wp\t\t: yes\n")
		fmt.Fprintf(&b, "flags\t\t: %s\n", m.Flags)
		fmt.Fprintf(&b, "bugs\t\t: %s\n", m.Bugs)
		fmt.Fprintf(&b, "bogomips\t: %.2f\n", bogo)
		if l.s.CPUVendor == "AuthenticAMD" {
			b.WriteString("TLB size\t: 3072 4K pages\n")
		}
		b.WriteString("clflush size\t: 64\ncache_alignment\t: 64\n")
		fmt.Fprintf(&b, "address sizes\t: %s\n", m.AddressSizes)
		if l.s.CPUVendor == "AuthenticAMD" {
			b.WriteString("power management: ts ttp tm hwpstate cpb eff_freq_ro [13] [14]\n\n")
		} else {
			b.WriteString("power management:\n\n")
		}
	}
	t.file("proc/cpuinfo", b.String())
}
