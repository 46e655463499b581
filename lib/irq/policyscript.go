package irq

import "strings"

// PlacedPath is the list of IRQs gpuprep placed (placed.go), one a line,
// IRQ number first: the policy script tells irqbalance to leave those
// alone. It is PlacedName in the run directory (lib/rundir), through which
// gpuprep reads and writes it.
const PlacedPath = "/run/gpuprep/" + PlacedName

// PlacedName is PlacedPath's name in the run directory.
const PlacedName = "irq-placed"

// PolicyScriptPath is where the packages install the policy script
// (PolicyScript(PlacedPath, ProcIRQDir, false)); irqbalance must be started with
// --policyscript=PolicyScriptPath for gpuprep to place IRQs beside it.
const PolicyScriptPath = "/usr/lib/gpuprep/irqbalance-policy"

// ProcIRQDir is the kernel's folder of IRQs the policy script writes in.
const ProcIRQDir = "/proc/irq"

// PolicyScript is the text of a /bin/sh script for irqbalance's
// --policyscript (-l) that bans every IRQ listed in the file list
// (PlacedPath on a node) and, as it bans one, puts it back on the CPUs
// gpuprep set (<irqDir>/<irq>/smp_affinity_list; ProcIRQDir on a node).
//
// What irqbalance does with it (irqbalance(1), "--policyscript", and
// classify.c, get_irq_user_policy and run_script_for_policy, in 1.9.2 as
// Debian 12 ships it, and unchanged in 1.9.4, 1.9.5 and upstream's
// master of March 2026):
//
//   - It runs the script once per IRQ, not per device, as
//     "exec <script> <device path> <irq>" through popen (so /bin/sh -c):
//     $1 is the device's sysfs folder as irqbalance found it
//     (/sys/bus/pci/devices/<bdf>), or /sys for an IRQ with no PCI
//     device; $2 is the IRQ number.
//   - It reads the script's stdout line by line (at most 127 bytes a
//     line) as key=value, keys and values case-insensitive: ban=true
//     excludes the IRQ from balancing, and irqbalance then never writes
//     its affinity; ban=false, balance_level=none|package|cache|core and
//     numa_node=<n> are the other keys. Other lines are logged and
//     ignored.
//   - A script given as a file must exit 0, else its output is dropped
//     (and an error logged for that IRQ). A folder of scripts runs each
//     executable file in turn until one exits 0 ("my policy"); 1 means
//     "no policy for this IRQ, ask the next", 2 an error. inDir makes the
//     script exit 1 for an IRQ it does not ban, so other scripts in the
//     folder still decide those.
//   - It asks once, when it first sees the IRQ: at start, when a new IRQ
//     appears in /proc/interrupts, and at a rescan. SIGHUP requests a
//     rescan (ignored until one balancing pass has run since the start
//     or the last rescan), which runs at the next pass (every 10 s by
//     default, --interval). So after changing the list, send irqbalance
//     SIGHUP; an IRQ taken off the list is balanced again only after
//     that rescan.
//   - Until that rescan it may still move an IRQ gpuprep placed: a pass
//     under way when the prolog wrote (scan, activate_mappings), or the
//     end of a rescan the previous job's epilog asked for (a rescan
//     sleeps one interval, then places every IRQ it does not ban). It
//     would then leave the IRQ banned where it put it, for the whole
//     job. So the script, asked about a listed IRQ, writes the CPUs
//     gpuprep set (the list's third field) to its smp_affinity_list when
//     it holds others, then answers ban=true: from the rescan on, the
//     IRQ is gpuprep's and where gpuprep put it. irqbalance runs the
//     script as the user it writes /proc/irq as, so the write is allowed
//     where irqbalance's own are (the upstream unit's ReadWritePaths).
//     An IRQ the kernel refused, or a list field that is not a CPU list,
//     is not written; a write the kernel refuses is silent.
//   - It checks only that the script exists when it runs it (stat); a
//     missing script or list bans nothing. The path is passed to the
//     shell unquoted: it must hold no spaces or shell characters.
//
// The script reads the list at every call, so gpuprep changes the list,
// never the script. It needs only sh's builtins; under the upstream unit's
// sandbox (PrivateUsers=true, ReadOnlyPaths=/) the script must be
// executable by others and the list readable by others.
func PolicyScript(list, irqDir string, inDir bool) string {
	noPolicy := "0"
	if inDir {
		noPolicy = "1"
	}
	return `#!/bin/sh
# irqbalance --policyscript written by gpuprep. irqbalance runs it once for
# each IRQ as "<script> <sysfs device path> <irq>" and reads key=value
# lines from its output: ban=true leaves that IRQ's affinity alone.
# gpuprep lists the IRQs it placed, one a line: the IRQ, its CPUs before,
# the CPUs gpuprep set, and "refused" where the kernel refused the move.
list=` + shellQuote(list) + `
irqs=` + shellQuote(irqDir) + `
case $2 in ''|*[!0-9]*) exit ` + noPolicy + ` ;; esac
if [ -r "$list" ]; then
	while read -r irq from to refused || [ -n "$irq" ]; do
		[ "$irq" = "$2" ] || continue
		# irqbalance may have moved it before this rescan: put it back.
		case $to in ''|*[!0-9,-]*) refused=bad ;; esac
		if [ -z "$refused" ] && read -r now 2>/dev/null <"$irqs/$2/smp_affinity_list" && [ "$now" != "$to" ]; then
			echo "$to" 2>/dev/null >"$irqs/$2/smp_affinity_list"
		fi
		echo ban=true
		exit 0
	done <"$list"
fi
exit ` + noPolicy + `
`
}

// shellQuote quotes s for sh: between single quotes, each single quote
// in s closed, escaped and reopened.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
