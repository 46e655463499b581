package slurmcores

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gpuprep/internal/oracleroot"
	"gpuprep/lib/textfmt"
)

// oracleNode is the NodeName of the slurm.conf SlurmdRegistered writes.
const oracleNode = "oracle1"

// registeredLine is slurmd's debug line with the counts it will register
// (xcpuinfo_hwloc_topo_get, logged at -vv before any network or spool work
// but its hwloc XML cache).
var registeredLine = regexp.MustCompile(`CPUs:(\d+) Boards:(\d+) Sockets:(\d+) CoresPerSocket:(\d+) ThreadsPerCore:(\d+)`)

// hwlocEnv reads root with hwloc's Linux backend only, as Slurm's facts
// (../shared/notes/slurm-facts.md) were checked: HWLOC_COMPONENTS=linux,stop.
func hwlocEnv(root string) []string {
	return []string{"HWLOC_FSROOT=" + root, "HWLOC_COMPONENTS=linux,stop", "PATH=/usr/bin:/bin"}
}

// SlurmdRegistered returns the counts slurmd registers for the fixture root
// under slurm.conf's SlurmdParameters=params ("numa_node_as_socket",
// "l3cache_as_socket"), which `slurmd -C` ignores (it reads no slurm.conf):
// `slurmd -D -G -vv -f CONF -N NODE`, which logs them and exits after
// printing the node's GRES, before any network work. It runs with a
// minimal slurm.conf whose spool, log and pid files are in a temporary
// directory (removed after), in private mount and network namespaces
// (`unshare -m -n`; with a user namespace when not root), with a
// deadline: it cannot reach a slurmctld nor touch the machine's own Slurm.
// A `fatal:` line (slurmd's "can not handle nobj[SOCKET] = -1") is an
// error naming it.
func SlurmdRegistered(root, params string) (Counts, error) {
	c, err := slurmdRegistered(hwlocEnv(root), params)
	if err != nil {
		return Counts{}, fmt.Errorf("slurmd -D -G with SlurmdParameters=%s on %s: %w", params, root, err)
	}
	return c, nil
}

// SlurmdCLinux is SlurmdC with the environment of SlurmdRegistered
// (HWLOC_COMPONENTS=linux,stop), so the two compare like with like.
func SlurmdCLinux(root string) (Counts, error) {
	c, err := slurmdCEnv(hwlocEnv(root))
	if err != nil {
		return Counts{}, fmt.Errorf("slurmd -C on %s: %w", root, err)
	}
	return c, nil
}

func slurmdRegistered(env []string, params string) (Counts, error) {
	dir, err := slurmdDir()
	if err != nil {
		return Counts{}, err
	}
	defer os.RemoveAll(dir)
	// slurmd sees dir at oracleroot.Work(dir): dir itself, or a bind mount
	// in $GPUPREP_ORACLE_ROOT (internal/oracleroot).
	conf := oracleConf(oracleroot.Work(dir), params, nil, "NodeName="+oracleNode+" NodeAddr=127.0.0.1 CPUs=1")
	out, runErr := runSlurmdG(env, dir, conf, oracleNode)
	if err := fatalLine(out); err != nil {
		return Counts{}, err
	}
	m := registeredLine.FindStringSubmatch(out)
	if m == nil {
		if runErr != nil {
			return Counts{}, fmt.Errorf("%w: %s", runErr, textfmt.Clip(strings.TrimSpace(out), 2000))
		}
		return Counts{}, fmt.Errorf("no CPUs:..Boards:.. line in: %s", textfmt.Clip(strings.TrimSpace(out), 2000))
	}
	if runErr != nil {
		return Counts{}, fmt.Errorf("%w after logging the counts: %s", runErr, textfmt.Clip(strings.TrimSpace(out), 2000))
	}
	var n [5]int
	for i := range n {
		n[i], _ = strconv.Atoi(m[i+1])
	}
	return Counts{CPUs: n[0], Boards: n[1], Sockets: n[2], CoresPerSocket: n[3], ThreadsPerCore: n[4]}, nil
}

// unsharePath finds util-linux's unshare.
func unsharePath() (string, error) {
	if p, err := exec.LookPath("unshare"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/bin/unshare", "/bin/unshare"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", errors.New("slurmcores: no unshare (util-linux)")
}

// RequireSlurmdRegistered is Require for SlurmdRegistered: slurmd, and
// unshare able to make private mount and network namespaces here.
func RequireSlurmdRegistered(t testing.TB) {
	t.Helper()
	RequireSlurmd(t)
	p, err := unsharePath()
	if err != nil {
		missing(t, err, "util-linux")
		return
	}
	args := []string{"-m", "-n", "true"}
	if os.Geteuid() != 0 {
		args = append([]string{"-r"}, args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if out, err := exec.CommandContext(ctx, p, args...).CombinedOutput(); err != nil {
		missing(t, fmt.Errorf("slurmcores: unshare %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out))), "util-linux (and namespaces allowed)")
	}
}
