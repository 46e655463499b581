// Package textfiledir finds the directory node_exporter's textfile collector
// reads, for general.metrics_dir = "auto". Upstream node_exporter has no
// default (it reads nothing unless --collector.textfile.directory is given);
// Debian's and Ubuntu's prometheus-node-exporter has one compiled in.
package textfiledir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"gpuprep/lib/host"
)

// Directories tried when no running node_exporter names one.
const (
	// DebianDir is compiled into Debian's and Ubuntu's
	// prometheus-node-exporter as the textfile directory.
	DebianDir = "/var/lib/prometheus/node-exporter"
	// LegacyDir was gpuprep's default before "auto", and is what many
	// upstream node_exporter installations pass.
	LegacyDir = "/var/lib/node_exporter/textfile_collector"
)

// exporterNames are the executables taken for node_exporter: upstream's
// and Debian's name.
var exporterNames = []string{"node_exporter", "prometheus-node-exporter"}

// commLen is how much of an executable's name /proc/<pid>/comm keeps.
const commLen = 15

// maxProcs bounds the /proc entries looked at, so that a node with an
// absurd number of processes cannot stall a hook.
const maxProcs = 1 << 17

// firstLoginUID is the lowest uid of a login user (SYS_UID_MAX is 999 on
// Debian and EL): a node_exporter process of such a user is not taken.
const firstLoginUID = 1000

// nobodyUID is the nobody user (containers' node_exporter runs as it).
const nobodyUID = 65534

// Result is what Find found.
type Result struct {
	// Dir is the node path of the textfile directory; "" for none.
	Dir string
	// Source says where Dir came from ("node_exporter process 812
	// (--collector.textfile.directory)", "Debian's compiled-in default").
	Source string
	// Tried says, one entry each, what was looked at and not taken, for
	// a warning when Dir is "".
	Tried []string
}

// Find looks for node_exporter's textfile directory under r, in order:
//
//  1. the --collector.textfile.directory of a running node_exporter or
//     prometheus-node-exporter (/proc/<pid>/cmdline), when that directory
//     exists here. The process is recognised by its executable's name only
//     (/proc/<pid>/exe, or /proc/<pid>/comm when exe cannot be read), and
//     taken only when it runs as a system account or nobody (the real uid
//     of /proc/<pid>/status below 1000, or 65534): a user can start a
//     process of any name, with any flags, but not as one of those, and
//     must not choose where root writes;
//  2. DebianDir, when it exists;
//  3. LegacyDir, when it exists.
//
// Nothing found is not an error: Result.Dir is "" and Result.Tried says why.
func Find(r host.Root) Result {
	var res Result
	if dir, src, ok := fromProcess(r, &res.Tried); ok {
		res.Dir, res.Source = dir, src
		return res
	}
	for _, c := range []struct{ dir, src string }{
		{DebianDir, "Debian's compiled-in default"},
		{LegacyDir, "the old default"},
	} {
		if why := dirProblem(r, c.dir); why != "" {
			res.Tried = append(res.Tried, c.dir+": "+why)
			continue
		}
		res.Dir, res.Source = c.dir, c.src+" "+c.dir
		return res
	}
	return res
}

// fromProcess scans /proc for a trusted node_exporter whose textfile
// directory exists, appending to tried what it passed over.
func fromProcess(r host.Root, tried *[]string) (dir, source string, ok bool) {
	pids, err := r.PIDs()
	if err != nil {
		*tried = append(*tried, fmt.Sprintf("running node_exporter: /proc: %v", err))
		return "", "", false
	}
	seen, n := 0, 0
	for _, pid := range pids {
		if n++; n > maxProcs {
			*tried = append(*tried, fmt.Sprintf("running node_exporter: more than %d processes, the rest not examined", maxProcs))
			break
		}
		exe, ok := exporterExe(r, pid)
		if !ok {
			continue
		}
		seen++
		who := fmt.Sprintf("%s process %d", exe, pid)
		p := "/proc/" + strconv.Itoa(pid)
		uid, err := r.RealUID(pid)
		if err != nil {
			continue // exited meanwhile, or no Uid: line
		}
		if uid >= firstLoginUID && uid != nobodyUID {
			*tried = append(*tried, fmt.Sprintf("%s: ignored, runs as uid %d (a login user's)", who, uid))
			continue
		}
		b, err := r.ReadFile(p + "/cmdline")
		if err != nil {
			continue
		}
		c := ParseCmdline(b)
		switch {
		case c.Disabled:
			*tried = append(*tried, who+": textfile collector turned off")
		case c.Dir == "" && path.Base(exe) == "prometheus-node-exporter":
			*tried = append(*tried, fmt.Sprintf("%s: no %s (its compiled-in default is %s)", who, Flag, DebianDir))
		case c.Dir == "":
			*tried = append(*tried, fmt.Sprintf("%s: no %s, reads no textfile", who, Flag))
		case !path.IsAbs(c.Dir):
			*tried = append(*tried, fmt.Sprintf("%s: %s=%q is relative", who, Flag, c.Dir))
		default:
			d := path.Clean(c.Dir)
			if why := dirProblem(r, d); why != "" {
				*tried = append(*tried, fmt.Sprintf("%s: %s=%s: %s (in a container?)", who, Flag, d, why))
				continue
			}
			return d, fmt.Sprintf("%s (%s=%s)", who, Flag, d), true
		}
	}
	if seen == 0 {
		*tried = append(*tried, "running node_exporter: none found")
	}
	return "", "", false
}

// exporterExe says whether process pid is node_exporter, by the file name
// of /proc/<pid>/exe (the kernel's " (deleted)" after an upgrade dropped),
// or, when exe cannot be read (not root), by /proc/<pid>/comm. A process
// that exited, or a kernel thread (no exe), is not.
func exporterExe(r host.Root, pid int) (string, bool) {
	p := "/proc/" + strconv.Itoa(pid)
	exe, err := os.Readlink(r.Path(p + "/exe"))
	if err == nil {
		base := path.Base(strings.TrimSuffix(exe, " (deleted)"))
		return base, slices.Contains(exporterNames, base)
	}
	if !errors.Is(err, fs.ErrPermission) && !errors.Is(err, syscall.EACCES) {
		return "", false
	}
	comm, err := r.ReadString(p + "/comm")
	if err != nil {
		return "", false
	}
	for _, n := range exporterNames {
		if comm == n[:min(len(n), commLen)] {
			return n, true
		}
	}
	return "", false
}

// dirProblem says why node path dir cannot be the textfile directory
// ("absent", "not a directory", the error); "" when it can.
func dirProblem(r host.Root, dir string) string {
	fi, err := os.Stat(r.Path(dir))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "absent"
	case err != nil:
		return err.Error()
	case !fi.IsDir():
		return "not a directory"
	}
	return ""
}
