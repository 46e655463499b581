package isolate

import (
	"path"
	"strings"

	"gpuprep/lib/cpuset"
)

// Units is systemd's side of the cgroups isolation confines. Where PID 1 is
// systemd, a unit's cgroup is systemd's: its CPUs are changed through
// systemd (the unit's AllowedCPUs=, set at runtime with D-Bus
// SetUnitProperties, as `systemctl set-property --runtime` does), never by
// writing cpuset.cpus behind its back, which the next `systemctl
// daemon-reload` undoes (systemd rewrites the parents'
// cgroup.subtree_control without cpuset) and a restart of the unit loses.
// lib/isolate/sdunits implements it over PID 1's private D-Bus socket,
// every call under the run's deadline.
type Units interface {
	// Unit reads the unit called name. ok is false when systemd has no
	// unit by that name whose control group (its ControlGroup property) is
	// cg, as "/system.slice/cron.service": a cgroup made behind systemd's
	// back, or one inside a unit that delegates its subtree.
	Unit(name, cg string) (u UnitInfo, ok bool, err error)
	// SetAllowedCPUs sets the unit's AllowedCPUs= at runtime; an empty
	// set is "none of its own".
	SetAllowedCPUs(name string, cpus cpuset.Set) error
	// Reload is `systemctl daemon-reload`: systemd reads its unit files
	// and drop-ins again.
	Reload() error
}

// UnitInfo is what isolation reads of a unit.
type UnitInfo struct {
	Name string
	// AllowedCPUs is the unit's AllowedCPUs property (empty: none).
	AllowedCPUs cpuset.Set
	// DropIns is its DropInPaths property: the drop-in files systemd
	// loaded for it, in any order.
	DropIns []string
}

// unitSuffixes are the unit types that have a cgroup of their own.
var unitSuffixes = []string{".service", ".scope", ".slice", ".socket", ".mount", ".swap"}

// unitName is the name of the unit whose cgroup cg would be (its last
// path element, "cron.service"), or "" when that element is no unit name.
func unitName(cg string) string {
	name := path.Base(cg)
	for _, s := range unitSuffixes {
		if strings.HasSuffix(name, s) && len(name) > len(s) {
			return name
		}
	}
	return ""
}

// Runtime drop-in folders of set-property --runtime (system.control; for
// transient units and init.scope, transient), and the persistent one of
// set-property without --runtime, which outranks them.
const (
	runtimeControlDir   = "/run/systemd/system.control"
	runtimeTransientDir = "/run/systemd/transient"
	persistentControl   = "/etc/systemd/system.control"
	// allowedDropIn is the file name systemd gives the drop-in of an
	// AllowedCPUs= set through SetUnitProperties.
	allowedDropIn = "50-AllowedCPUs.conf"
)

// runtimeDropIns are the paths a runtime AllowedCPUs= of unit may be
// stored at.
func runtimeDropIns(unit string) []string {
	return []string{
		path.Join(runtimeControlDir, unit+".d", allowedDropIn),
		path.Join(runtimeTransientDir, unit+".d", allowedDropIn),
	}
}

// isRuntimeDropIn says whether p is one of a unit's runtime AllowedCPUs=
// drop-ins.
func isRuntimeDropIn(p string) bool {
	return path.Base(p) == allowedDropIn &&
		(strings.HasPrefix(p, runtimeControlDir+"/") || strings.HasPrefix(p, runtimeTransientDir+"/"))
}

// Outranking finds the drop-in that would replace a runtime AllowedCPUs=
// of the unit at the next daemon-reload: systemd applies drop-ins in the
// order of their file names, and a file of the same name in a folder of
// higher priority masks the other. So the persistent
// /etc/systemd/system.control/<unit>.d/50-AllowedCPUs.conf (`systemctl
// set-property` without --runtime) masks a runtime one, and any drop-in
// whose name sorts after 50-AllowedCPUs.conf and that sets AllowedCPUs=
// (an admin's override.conf) is applied after it. The unit file itself is
// applied before every drop-in, so its AllowedCPUs= never outranks.
//
// dropIns is the unit's DropInPaths; read gives a file's content (a file
// that cannot be read is taken to set nothing). It returns the outranking
// file and the CPU list it sets ("" when none outranks).
func Outranking(dropIns []string, read func(string) (string, error)) (file, cpus string) {
	for _, p := range dropIns {
		if isRuntimeDropIn(p) {
			continue
		}
		base := path.Base(p)
		if base < allowedDropIn {
			continue
		}
		s, err := read(p)
		if err != nil {
			continue
		}
		if v, ok := lastAllowedCPUs(s); ok && (file == "" || base >= path.Base(file)) {
			file, cpus = p, v
		}
	}
	return file, cpus
}

// lastAllowedCPUs is the value of the last AllowedCPUs= line of a unit
// file, as systemd reads it (the last assignment wins; an empty one
// resets).
func lastAllowedCPUs(s string) (string, bool) {
	val, found := "", false
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		k, v, ok := strings.Cut(line, "=")
		if ok && strings.TrimSpace(k) == "AllowedCPUs" {
			val, found = strings.TrimSpace(v), true
		}
	}
	return val, found
}
