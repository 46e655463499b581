package gresgen

import (
	"fmt"
	"strconv"
	"strings"
)

// checkNodeLine compares the CPU layout of slurm.conf's NodeName= line for
// this node (in the slurm.conf Options.Slurmd read) with what slurmd will
// register: the same socket count, following SlurmdParameters, as the node
// line gpuprep-gres prints by default. Only what the line (or a
// NodeName=DEFAULT line before it) sets is compared: CPUs, Sockets (or
// Boards x SocketsPerBoard), CoresPerSocket, ThreadsPerCore. A slurm.conf
// with no line for this node (or none read) gives nothing.
func checkNodeLine(want *Result, opt Options) []Difference {
	v := opt.Slurmd
	if !v.found() || v.conf == nil {
		return nil
	}
	rec, ok := v.conf.Node(want.Node.NodeName)
	if !ok {
		return nil
	}
	reg := want.registered
	var have, will []string
	var bad []string
	num := func(key string) (int, bool) {
		s, ok := rec.Get(key)
		if !ok {
			return 0, false
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s=%s is not a number", key, s))
			return 0, false
		}
		return n, true
	}
	cmp := func(key string, got, registered int) {
		if got != registered {
			have = append(have, fmt.Sprintf("%s=%d", key, got))
			will = append(will, fmt.Sprintf("%s=%d", key, registered))
		}
	}
	if n, ok := num("CPUs"); ok {
		cmp("CPUs", n, reg.CPUs)
	}
	// slurmd registers one board (Boards=1) where hwloc's tree has no
	// groups of packages; Sockets with Boards is per board, as
	// SocketsPerBoard (slurm.conf(5)).
	if n, ok := num("Boards"); ok {
		cmp("Boards", n, 1)
	}
	key := "SocketsPerBoard"
	n, ok := num(key)
	if !ok {
		key = "Sockets"
		n, ok = num(key)
	}
	if ok {
		cmp(key, n, reg.Sockets)
	}
	if n, ok := num("CoresPerSocket"); ok {
		cmp("CoresPerSocket", n, reg.CoresPerSocket)
	}
	if n, ok := num("ThreadsPerCore"); ok {
		cmp("ThreadsPerCore", n, reg.ThreadsPerCore)
	}
	var out []Difference
	for _, b := range bad {
		out = append(out, Difference{Msg: fmt.Sprintf("%s: NodeName=%s: %s", rec.Where, want.Node.NodeName, b)})
	}
	if len(have) > 0 {
		out = append(out, Difference{Msg: fmt.Sprintf("%s: NodeName=%s has %s, but slurmd will register %s (it counts %s: %s)",
			rec.Where, want.Node.NodeName, strings.Join(have, " "), strings.Join(will, " "),
			viewName(v.Sockets), v.reason())})
	}
	return out
}
