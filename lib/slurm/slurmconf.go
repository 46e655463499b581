package slurm

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"gpuprep/lib/host"
	"gpuprep/lib/textfmt"
)

// Where slurm.conf is looked for, node paths (read under a host.Root).
const (
	// DefaultConfFile is slurm.conf where Debian's and SchedMD's packages
	// put it.
	DefaultConfFile = "/etc/slurm/slurm.conf"
	// ConfiglessConfFile is where slurmd in configless mode links the
	// slurm.conf it fetched from slurmctld (its SlurmdSpoolDir/conf-cache),
	// for the node's client commands (Slurm 21.08 and later).
	ConfiglessConfFile = "/run/slurm/conf/slurm.conf"
	// DefaultSlurmdPidFile is SlurmdPidFile when slurm.conf does not set it.
	DefaultSlurmdPidFile = "/run/slurmd.pid"
)

// maxConfFile bounds one slurm.conf (or included) file, and maxIncludes
// the number of files one read may open, so a loop of Include lines ends.
const (
	maxConfFile = 4 << 20
	maxIncludes = 64
)

// LocateConf finds the slurm.conf this node's Slurm reads, as Slurm's own
// commands do: the file SLURM_CONF names (slurmd sets it for the prolog and
// epilog, and points it at its configless cache when it has one), else
// /etc/slurm/slurm.conf, else the configless copy under /run/slurm/conf.
// slurmConfEnv is SLURM_CONF's value ("" when unset). The result is a node
// path; an error wrapping fs.ErrNotExist says none of them exists.
func LocateConf(r host.Root, slurmConfEnv string) (string, error) {
	if slurmConfEnv != "" {
		if !path.IsAbs(slurmConfEnv) {
			return "", &EnvError{Var: "SLURM_CONF", Value: slurmConfEnv, Msg: "not an absolute path"}
		}
		return path.Clean(slurmConfEnv), nil
	}
	for _, f := range []string{DefaultConfFile, ConfiglessConfFile} {
		if r.Exists(f) {
			return f, nil
		}
	}
	return "", fmt.Errorf("no slurm.conf at %s or %s and SLURM_CONF is not set: %w", DefaultConfFile, ConfiglessConfFile, fs.ErrNotExist)
}

// Conf is what gpuprep reads of slurm.conf: its node-wide Key=Value
// settings, keys compared without case as Slurm does. NodeName=,
// PartitionName=, NodeSet=, DownNodes= and FrontendName= lines describe
// records, not the node's settings, and are skipped whole.
type Conf struct {
	// File is the slurm.conf read (a node path).
	File string
	// values maps each lower-case key to its last value and where it was
	// set ("slurm.conf:12").
	values map[string]slurmConfValue
	// records are the record lines (NodeName= and the like) in file
	// order, for slurmconf_nodes.go.
	records []confRecord
}

type slurmConfValue struct {
	value, where string
}

// recordKeys start lines that describe one record each.
var recordKeys = map[string]bool{"nodename": true, "partitionname": true, "nodeset": true, "downnodes": true, "frontendname": true}

// ReadConf reads slurm.conf (a node path) and the files its Include lines
// name, each read under r. An Include path that is not absolute is taken
// relative to the including file's folder, as slurmd does; it may be a glob
// pattern. A missing main file is an error wrapping fs.ErrNotExist; a
// missing included file, an unreadable one or a line that does not parse is
// an error naming the file and line.
func ReadConf(r host.Root, file string) (*Conf, error) {
	c := &Conf{File: file, values: map[string]slurmConfValue{}}
	opened := 0
	if err := c.readFile(r, file, &opened); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Conf) readFile(r host.Root, file string, opened *int) error {
	if *opened++; *opened > maxIncludes {
		return fmt.Errorf("%s: more than %d files through Include lines (a loop?)", file, maxIncludes)
	}
	b, _, err := host.ReadRegular(r.Path(file), maxConfFile)
	if err != nil {
		return fmt.Errorf("slurm.conf: %w", err)
	}
	for i, line := range strings.Split(string(b), "\n") {
		where := fmt.Sprintf("%s:%d", file, i+1)
		line = StripComment(line)
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if strings.EqualFold(fields[0], "include") {
			if len(fields) != 2 {
				return fmt.Errorf("%s: Include takes one file, found %q", where, line)
			}
			if err := c.include(r, file, fields[1], where, opened); err != nil {
				return err
			}
			continue
		}
		pairs, err := splitPairs(line)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if recordKeys[strings.ToLower(pairs[0][0])] {
			c.records = append(c.records, confRecord{pairs: pairs, where: where})
			continue
		}
		for _, p := range pairs {
			c.values[strings.ToLower(p[0])] = slurmConfValue{value: p[1], where: where}
		}
	}
	return nil
}

// include reads the files an Include line names.
func (c *Conf) include(r host.Root, from, name, where string, opened *int) error {
	if !path.IsAbs(name) {
		name = path.Join(path.Dir(from), name)
	}
	files := []string{name}
	if strings.ContainsAny(name, "*?[") {
		m, err := r.Glob(name)
		if err != nil {
			return fmt.Errorf("%s: Include %s: %w", where, name, err)
		}
		files = m
	}
	for _, f := range files {
		if err := c.readFile(r, f, opened); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%s: Include %s: %w", where, f, err)
			}
			return err
		}
	}
	return nil
}

// splitPairs splits "Key=Value Key2="a b"" into key/value pairs; a value
// may be double-quoted to hold blanks.
func splitPairs(line string) ([][2]string, error) {
	var out [][2]string
	s := strings.TrimSpace(line)
	for s != "" {
		key, rest, ok := strings.Cut(s, "=")
		if !ok || key == "" || strings.ContainsAny(key, " \t") {
			return nil, fmt.Errorf("%q is not Key=Value", textfmt.Clip(s, 40))
		}
		var val string
		if strings.HasPrefix(rest, `"`) {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				return nil, fmt.Errorf("%s: unterminated quote", key)
			}
			val, rest = rest[1:1+end], rest[2+end:]
		} else if i := strings.IndexAny(rest, " \t"); i >= 0 {
			val, rest = rest[:i], rest[i:]
		} else {
			val, rest = rest, ""
		}
		out = append(out, [2]string{key, val})
		s = strings.TrimSpace(rest)
	}
	return out, nil
}

// Get is a setting's value and whether slurm.conf sets it.
func (c *Conf) Get(key string) (string, bool) {
	if c == nil {
		return "", false
	}
	v, ok := c.values[strings.ToLower(key)]
	return v.value, ok
}

// Where says where a setting was set ("/etc/slurm/slurm.conf:12"), or the
// main file when it is not set.
func (c *Conf) Where(key string) string {
	if v, ok := c.values[strings.ToLower(key)]; ok {
		return v.where
	}
	return c.File
}

// SlurmdPidFile is the file slurmd writes its pid to (SlurmdPidFile=,
// default /run/slurmd.pid), with %n (the node's name, for several slurmd
// per host) and %h (the host name) filled in from node and hostname.
func (c *Conf) SlurmdPidFile(node, hostname string) string {
	f, ok := c.Get("SlurmdPidFile")
	if !ok || f == "" {
		return DefaultSlurmdPidFile
	}
	return strings.NewReplacer("%n", node, "%h", hostname).Replace(f)
}

// SlurmdParameters lists SlurmdParameters= (lower case), e.g.
// ["numa_node_as_socket"].
func (c *Conf) SlurmdParameters() []string {
	v, _ := c.Get("SlurmdParameters")
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.ToLower(strings.TrimSpace(p)); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// HasSlurmdParameter says whether SlurmdParameters= lists p.
func (c *Conf) HasSlurmdParameter(p string) bool {
	for _, q := range c.SlurmdParameters() {
		if q == strings.ToLower(p) {
			return true
		}
	}
	return false
}

// StripComment cuts a line of a Slurm configuration file (slurm.conf,
// gres.conf: parse_config.c's rule) at its comment: the first '#' preceded
// by an even number of backslashes.
func StripComment(s string) string {
	bs := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '#':
			if bs%2 == 0 {
				return s[:i]
			}
			bs = 0
		case '\\':
			bs++
		default:
			bs = 0
		}
	}
	return s
}
