// Package oracleroot runs the tools gpuprep's test oracles compare against
// (lstopo-no-graphics, slurmd, cc and the oracle cc builds) either on this
// machine or, when GPUPREP_ORACLE_ROOT names a Debian root
// (test/matrix/mkroot.sh), inside that root through chroot, so the same
// tests hold gpuprep against another release's hwloc and Slurm.
//
// In a root, a command runs as
//
//	unshare -m [-n] --propagation private sh -c SCRIPT
//
// where SCRIPT bind-mounts the fixture root (HWLOC_FSROOT) read-only on
// ROOT/gpuprep-fsroot and the command's working directory on
// ROOT/gpuprep-work, then execs `chroot ROOT env -i -C /gpuprep-work ENV
// TOOL ARGS`. Bind mounts rather than copies: a fixture root is tens of
// thousands of files and the oracles read each one many times, and a bind
// costs nothing. The private mount namespace keeps the mounts out of this
// machine's mount table and drops them when the command exits, however it
// exits (no unmount to forget), and lets concurrent commands use the same
// mount points. HWLOC_FSROOT=/ (this machine) binds /sys and /proc instead.
package oracleroot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Var is the environment variable naming the root; unset (or empty), the
// tools are this machine's.
const Var = "GPUPREP_ORACLE_ROOT"

// Mount points in the root, made by test/matrix/mkroot.sh (and by Command
// when missing).
const (
	FSRoot  = "/gpuprep-fsroot"
	WorkDir = "/gpuprep-work"
)

// Root returns $GPUPREP_ORACLE_ROOT, cleaned, or "" when unset.
func Root() string {
	r := os.Getenv(Var)
	if r == "" {
		return ""
	}
	return filepath.Clean(r)
}

// Describe says where the tools come from, for test logs.
func Describe() string {
	if r := Root(); r != "" {
		return Var + "=" + r
	}
	return "this machine"
}

// sbin are searched after PATH on this machine (Debian's slurmd is in
// /usr/sbin, often not on a test's PATH), and are the whole search path in
// a root.
var sbin = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// LookPath finds tool: on this machine, on PATH then in the sbin folders;
// in the root, in its sbin folders (the path returned is the root's). A
// path with a slash is returned as is.
func LookPath(tool string) (string, error) {
	if strings.Contains(tool, "/") {
		return tool, nil
	}
	root := Root()
	if root == "" {
		if p, err := exec.LookPath(tool); err == nil {
			return p, nil
		}
	}
	for _, d := range sbin {
		p := filepath.Join(d, tool)
		// In the root only Lstat: an absolute symlink (/usr/bin/cc ->
		// /etc/alternatives/cc) points into the root, not this machine.
		if root != "" {
			if _, err := os.Lstat(filepath.Join(root, p)); err == nil {
				return p, nil
			}
			continue
		}
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if root != "" {
		return "", fmt.Errorf("%s=%s has no %s (build the root with test/matrix/mkroot.sh)", Var, root, tool)
	}
	return "", fmt.Errorf("no %s on PATH or in /usr/sbin", tool)
}

// Work returns the path at which a command run with Spec.Dir = dir sees
// dir: dir on this machine, WorkDir in a root. Paths passed in Args or
// written into files the tool reads are built on it.
func Work(dir string) string {
	if Root() == "" {
		return dir
	}
	return WorkDir
}

// Spec is one command.
type Spec struct {
	Tool string   // a name looked up with LookPath, or a path (Work(Dir)+"/bin")
	Args []string // paths in them as the tool sees them (Work)
	// Env is the tool's whole environment. HWLOC_FSROOT=<folder on this
	// machine> is rewritten to where the tool sees the folder.
	Env []string
	Dir string // working directory, on this machine; "" for none
	// Unshare are more unshare(1) namespace options ("-n"); with them the
	// command runs under `unshare -m OPTIONS --propagation private` (with
	// -r when not root) on this machine too.
	Unshare []string
	// System: in a root, the tool also sees this machine's /proc and
	// /sys/fs/cgroup (read-only; the rest of its /sys is an empty tmpfs),
	// as slurmd -D needs to start its cgroup plugin.
	System bool
}

// Command returns the command for s: on this machine, or in the root.
func Command(ctx context.Context, s Spec) (*exec.Cmd, error) {
	tool, err := LookPath(s.Tool)
	if err != nil {
		return nil, err
	}
	root := Root()
	if root == "" {
		if len(s.Unshare) == 0 {
			cmd := exec.CommandContext(ctx, tool, s.Args...)
			cmd.Env, cmd.Dir = s.Env, s.Dir
			return cmd, nil
		}
		unshare, err := LookPath("unshare")
		if err != nil {
			return nil, err
		}
		cmd := exec.CommandContext(ctx, unshare, append(unshareArgs(s.Unshare), append([]string{tool}, s.Args...)...)...)
		cmd.Env, cmd.Dir = s.Env, s.Dir
		return cmd, nil
	}
	return inRoot(ctx, root, tool, s)
}

func unshareArgs(more []string) []string {
	a := append(append([]string{"-m"}, more...), "--propagation", "private")
	if os.Geteuid() != 0 {
		a = append([]string{"-r"}, a...)
	}
	return a
}

// script runs in the new mount namespace: $1 the root, $2 the fixture
// root ("" for none), $3 the working directory ("" for none), $4 "system"
// for Spec.System, then env's arguments.
const script = `set -e
root=$1 fs=$2 work=$3 sys=$4
shift 4
if [ "$fs" = / ]; then
	mount --rbind /sys "$root/sys"
	mount --rbind /proc "$root/proc"
elif [ "$sys" = system ]; then
	mount --rbind /proc "$root/proc"
	mount -t tmpfs -o mode=0755 gpuprep-sys "$root/sys"
	mkdir -p "$root/sys/fs/cgroup"
	mount --rbind /sys/fs/cgroup "$root/sys/fs/cgroup"
	findmnt -R -n -l -o TARGET "$root/sys/fs/cgroup" | while read -r m; do mount -o remount,bind,ro "$m"; done
fi
if [ -n "$fs" ] && [ "$fs" != / ]; then
	mount --bind "$fs" "$root` + FSRoot + `"
	mount -o remount,bind,ro "$root` + FSRoot + `"
fi
[ -z "$work" ] || mount --bind "$work" "$root` + WorkDir + `"
exec chroot "$root" /usr/bin/env -i -C ` + WorkDir + ` "$@"
`

// inRoot is Command in root.
func inRoot(ctx context.Context, root, tool string, s Spec) (*exec.Cmd, error) {
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%s=%s: not a folder (build it with test/matrix/mkroot.sh)", Var, root)
	}
	for _, d := range []string{FSRoot, WorkDir} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return nil, fmt.Errorf("%s: %w", Var, err)
		}
	}
	unshare, err := hostUnshare()
	if err != nil {
		return nil, err
	}
	var env []string
	fs := ""
	for _, e := range s.Env {
		if v, ok := strings.CutPrefix(e, "HWLOC_FSROOT="); ok {
			if fs, err = filepath.Abs(v); err != nil {
				return nil, fmt.Errorf("HWLOC_FSROOT=%s: %w", v, err)
			}
			if fs != "/" {
				e = "HWLOC_FSROOT=" + FSRoot
			}
		}
		env = append(env, e)
	}
	work := ""
	if s.Dir != "" {
		if work, err = filepath.Abs(s.Dir); err != nil {
			return nil, fmt.Errorf("working directory %s: %w", s.Dir, err)
		}
	}
	sys := ""
	if s.System {
		sys = "system"
	}
	args := append(unshareArgs(s.Unshare), "/bin/sh", "-c", script, "sh", root, fs, work, sys)
	args = append(append(append(args, env...), tool), s.Args...)
	cmd := exec.CommandContext(ctx, unshare, args...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	return cmd, nil
}

// hostUnshare is this machine's unshare (util-linux), whatever PATH is.
func hostUnshare() (string, error) {
	for _, p := range []string{"/usr/bin/unshare", "/bin/unshare"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, nil
		}
	}
	if p, err := exec.LookPath("unshare"); err == nil {
		return p, nil
	}
	return "", errors.New("oracleroot: no unshare (util-linux) on this machine")
}
