package textfiledir

import (
	"strconv"
	"strings"
)

// Flag is node_exporter's option naming the directory its textfile
// collector reads (kingpin: "--flag=value" or "--flag value").
const Flag = "--collector.textfile.directory"

// Flags that turn the textfile collector off: "--no-collector.textfile",
// or "--collector.disable-defaults" without "--collector.textfile".
const (
	flagEnable          = "--collector.textfile"
	flagDisable         = "--no-collector.textfile"
	flagDisableDefaults = "--collector.disable-defaults"
)

// Cmdline is what a node_exporter command line says about its textfile
// collector.
type Cmdline struct {
	// Dir is the value of the last --collector.textfile.directory ("" when
	// absent or empty: then the collector reads nothing).
	Dir string
	// Disabled says the collector is turned off, whatever Dir says.
	Disabled bool
}

// ParseCmdline reads a /proc/<pid>/cmdline: arguments separated (and
// usually ended) by NUL bytes, the first the program's name. It accepts
// "--collector.textfile.directory=DIR" and "--collector.textfile.directory
// DIR" (and the single-dash spelling of node_exporter before 0.15), stops at
// "--", and keeps the last value given, as a flag parser would.
func ParseCmdline(b []byte) Cmdline {
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	var c Cmdline
	enabled, noDefaults := false, false
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "-collector.") {
			a = "-" + a // node_exporter < 0.15 used Go's flag package
		}
		name, value, hasValue := strings.Cut(a, "=")
		switch name {
		case Flag:
			if !hasValue {
				if i+1 >= len(args) {
					continue
				}
				i++
				value = args[i]
			}
			c.Dir = value
		case flagEnable:
			on, err := strconv.ParseBool(value)
			on = !hasValue || (on && err == nil)
			enabled, c.Disabled = on, !on
		case flagDisable:
			enabled, c.Disabled = false, true
		case flagDisableDefaults:
			noDefaults = true
		}
	}
	if noDefaults && !enabled {
		c.Disabled = true
	}
	return c
}
