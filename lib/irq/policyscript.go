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
// (PolicyScript(PlacedPath, false)); irqbalance must be started with
// --policyscript=PolicyScriptPath for gpuprep to place IRQs beside it.
const PolicyScriptPath = "/usr/lib/gpuprep/irqbalance-policy"

// PolicyScript is the text of a /bin/sh script for irqbalance's
// --policyscript (-l) that bans every IRQ listed in the file list
// (PlacedPath on a node).
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
//     SIGHUP; until that rescan it may still move an IRQ gpuprep placed,
//     and an IRQ taken off the list is balanced again only after it.
//   - It checks only that the script exists when it runs it (stat); a
//     missing script or list bans nothing. The path is passed to the
//     shell unquoted: it must hold no spaces or shell characters.
//
// The script reads the list at every call, so gpuprep changes the list,
// never the script. It needs only sh's builtins; under the upstream unit's
// sandbox (PrivateUsers=true, ReadOnlyPaths=/) the script must be
// executable by others and the list readable by others.
func PolicyScript(list string, inDir bool) string {
	noPolicy := "0"
	if inDir {
		noPolicy = "1"
	}
	return `#!/bin/sh
# irqbalance --policyscript written by gpuprep. irqbalance runs it once for
# each IRQ as "<script> <sysfs device path> <irq>" and reads key=value
# lines from its output: ban=true leaves that IRQ's affinity alone.
# gpuprep lists the IRQs it placed, one a line, its number first, in:
list=` + shellQuote(list) + `
[ -n "$2" ] || exit ` + noPolicy + `
if [ -r "$list" ]; then
	while read -r irq rest || [ -n "$irq" ]; do
		if [ "$irq" = "$2" ]; then
			echo ban=true
			exit 0
		fi
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
