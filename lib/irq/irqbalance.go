package irq

import (
	"strings"

	"gpuprep/lib/host"
)

// Irqbalance is a running irqbalance daemon.
type Irqbalance struct {
	PID int
	// PolicyScript is the --policyscript (-l) of its command line; ""
	// when it runs without one, and then bans nothing gpuprep lists.
	PolicyScript string
}

// FindIrqbalance lists the processes named irqbalance: /proc/<pid>/comm,
// then /proc/<pid>/cmdline for its --policyscript. A process that exits
// meanwhile, or is a zombie (an empty cmdline), is left out. No process
// means irqbalance does not run: gpuprep's placement then lasts.
func FindIrqbalance(r host.Root) ([]Irqbalance, error) {
	pids, err := r.PIDs()
	if err != nil {
		return nil, err
	}
	var out []Irqbalance
	for _, pid := range pids {
		comm, err := r.ReadString(host.ProcPath(pid, "comm"))
		if host.ProcGone(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if comm != "irqbalance" {
			continue
		}
		cmd, err := r.ReadFile(host.ProcPath(pid, "cmdline"))
		if host.ProcGone(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if len(cmd) == 0 {
			continue // a zombie, or exiting
		}
		args := strings.Split(strings.TrimRight(string(cmd), "\x00"), "\x00")
		out = append(out, Irqbalance{PID: pid, PolicyScript: PolicyScriptArg(args)})
	}
	return out, nil
}

// irqbalanceOpts are irqbalance's long options (irqbalance.c, lopts, 1.9),
// with whether each takes a value: getopt_long accepts any unambiguous
// prefix of them ("--pol" for --policyscript; "--p" is ambiguous).
var irqbalanceOpts = map[string]bool{
	"oneshot": false, "debug": false, "foreground": false, "powerthresh": true,
	"banirq": true, "deepestcache": true, "policyscript": true, "pid": true,
	"journal": false, "banmod": true, "interval": true, "version": false,
	"migrateval": true,
}

// irqbalanceShortArg are irqbalance's short options that take a value
// (its getopt string "odfjVi:p:s:c:l:m:t:e:").
const irqbalanceShortArg = "ipsclmte"

// PolicyScriptArg finds the policy script in irqbalance's arguments
// (argv, argv[0] first) as getopt_long reads them: --policyscript=X,
// --policyscript X, an unambiguous prefix such as --pol=X, -l X, -lX or
// -flX; the last one counts. "" when none is given.
func PolicyScriptArg(argv []string) string {
	script := ""
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--":
			return script
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			opt, ok := longOpt(name)
			if !ok || !irqbalanceOpts[opt] {
				continue
			}
			if !hasVal && i+1 < len(argv) {
				i++
				val, hasVal = argv[i], true
			}
			if opt == "policyscript" && hasVal {
				script = val
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for j := 1; j < len(a); j++ {
				c := a[j]
				if !strings.ContainsRune(irqbalanceShortArg, rune(c)) {
					continue
				}
				val := a[j+1:]
				if val == "" {
					if i+1 >= len(argv) {
						break
					}
					i++
					val = argv[i]
				}
				if c == 'l' {
					script = val
				}
				break
			}
		}
	}
	return script
}

// longOpt resolves a long option's name or unambiguous prefix.
func longOpt(name string) (string, bool) {
	if _, ok := irqbalanceOpts[name]; ok {
		return name, true
	}
	found := ""
	for o := range irqbalanceOpts {
		if name != "" && strings.HasPrefix(o, name) {
			if found != "" {
				return "", false
			}
			found = o
		}
	}
	return found, found != ""
}
