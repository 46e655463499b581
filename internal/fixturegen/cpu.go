package fixturegen

import (
	"fmt"
	"strings"
)

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
	if !l.s.OldKernel { // OldKernel roots lack it: readers fall back on present and cpuN/online
		l.list(t, sysCPU+"/online", l.onlineCPUs())
	}
	l.list(t, sysCPU+"/possible", l.allCPUs())
	l.list(t, sysCPU+"/present", l.allCPUs())
	l.list(t, sysCPU+"/offline", l.offlineCPUs())
	l.list(t, sysCPU+"/isolated", nil)
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
		switch {
		case c.Offline:
			t.line(dir+"/online", "0")
		case c.ID != 0 || l.isArm():
			t.line(dir+"/online", "1")
		}
		t.link(fmt.Sprintf("%s/node%d", dir, c.Node), fmt.Sprintf("%s/node%d", sysNode, c.Node))
		if c.Offline {
			continue
		}
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
	l.list(t, p+"_list", ids)
}

func writeTopology(t *tree, l *layout, c cpu, dir string) {
	core := l.coreCPUs(c.ID)
	pkg := l.socketCPUs(c.Socket)
	pkgID := c.Socket
	if l.s.PackageIDUnknown {
		pkgID = -1
	}
	t.linef(dir+"/physical_package_id", "%d", pkgID)
	t.linef(dir+"/core_id", "%d", c.CoreID)
	set(t, l, dir+"/thread_siblings", core)
	set(t, l, dir+"/core_siblings", pkg)
	if l.s.OldKernel { // core_cpus, package_cpus, die_* and cluster_* came later
		return
	}
	set(t, l, dir+"/core_cpus", core)
	set(t, l, dir+"/package_cpus", pkg)
	// Clusters are cores sharing an L2: one core (or compute unit) unless
	// the shape groups ClusterCores cores.
	if cl := l.s.ClusterCores; cl > 1 {
		t.linef(dir+"/cluster_id", "%d", (c.Socket*l.s.CoresPerSocket+c.Core)/cl)
		set(t, l, dir+"/cluster_cpus", l.coreGroupCPUs(c.ID, cl))
	} else {
		t.linef(dir+"/cluster_id", "%d", c.Socket*l.s.CoresPerSocket+c.Core)
		set(t, l, dir+"/cluster_cpus", core)
	}
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
		l.list(t, idx+"/shared_cpu_list", shared)
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
		if c.Offline {
			continue
		}
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
		if c.Offline {
			continue
		}
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
			if c.Offline {
				continue
			}
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
		if c.Offline { // /proc/cpuinfo shows online CPUs only
			continue
		}
		apic := c.Socket<<7 | c.CoreID<<1 | c.Thread
		if l.s.ThreadsPerCore == 1 {
			apic = c.Socket<<7 | c.CoreID
		}
		// siblings: online CPUs of the package; cpu cores: its online
		// cores as the kernel counts them (thread-sibling groups, so
		// compute units on Bulldozer).
		siblings := l.socketCPUs(c.Socket)
		units := map[int]bool{}
		for _, id := range siblings {
			units[l.CPUs[id].Core/l.computeUnit()] = true
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
		fmt.Fprintf(&b, "siblings\t: %d\n", len(siblings))
		fmt.Fprintf(&b, "core id\t\t: %d\n", c.CoreID)
		fmt.Fprintf(&b, "cpu cores\t: %d\n", len(units))
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
