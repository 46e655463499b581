package mps

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"gpuprep/lib/host"
)

// CgroupParent is the cgroup, under the cgroup v2 root, that holds one
// cgroup per control daemon where no systemd runs them (Cgroupfs).
const CgroupParent = "gpuprep.mps"

// Cgroupfs launches each control daemon (`nvidia-cuda-mps-control -d`)
// straight into a cgroup of gpuprep's own, /sys/fs/cgroup/gpuprep.mps/
// <user>-<key> (cgroup v2; the kernel's clone3 CLONE_INTO_CGROUP, Linux
// 5.7 and later, so the daemon is never in the caller's cgroup, not even
// for a moment), outside slurmd's. Where that cannot be done (cgroup v1,
// a read-only cgroupfs as in a container, an older kernel) it starts the
// daemon as a plain child in a session of its own, and warns naming the
// cgroup it runs in. For nodes whose PID 1 is not systemd: where it is,
// use Systemd.
type Cgroupfs struct {
	Root host.Root // where /sys/fs/cgroup is
}

var _ Launcher = Cgroupfs{}

func (c Cgroupfs) dir(d Daemon) string {
	return c.Root.Path("/sys/fs/cgroup/" + CgroupParent + "/" + Name(d))
}

// Launch runs `bin -d` in d's cgroup, made here, or where that fails, in
// the caller's, with a warning.
func (c Cgroupfs) Launch(ctx context.Context, d Daemon, bin string, env []string) ([]byte, string, string, error) {
	argv := []string{bin, "-d"}
	dir := c.dir(d)
	fd, why := c.open(dir)
	if fd >= 0 {
		defer unix.Close(fd)
		out, err := runCmd(ctx, argv, env, "", func(cmd *exec.Cmd) {
			cmd.SysProcAttr.UseCgroupFD = true
			cmd.SysProcAttr.CgroupFD = fd
		})
		var ee *exec.ExitError
		if err == nil || errors.As(err, &ee) || ctx.Err() != nil {
			return out, "cgroup " + strings.TrimPrefix(dir, c.Root.Path("/sys/fs/cgroup")), "", err
		}
		why = fmt.Sprintf("cannot start a process in %s: %v", dir, err) // not started: try without
		os.Remove(dir)
	}
	own := c.own()
	warn := fmt.Sprintf("MPS control daemon for %s runs in this process's cgroup %s (slurmd's, for a prolog), not one of its own (%s): it may end with that service", d.Paths.Pipe, own, why)
	out, err := runCmd(ctx, argv, env, "", nil)
	return out, "cgroup " + own, warn, err
}

// open makes d's cgroup directory dir (and its parent) and opens it for
// clone3; -1 and why when that cannot be done.
func (c Cgroupfs) open(dir string) (int, string) {
	mount := c.Root.Path("/sys/fs/cgroup")
	var st unix.Statfs_t
	if err := unix.Statfs(mount, &st); err != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
		return -1, mount + " is not a cgroup v2 file system"
	}
	if err := os.Mkdir(filepath.Dir(dir), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return -1, err.Error()
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return -1, err.Error()
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, (&os.PathError{Op: "open", Path: dir, Err: err}).Error()
	}
	return fd, ""
}

// own is this process's cgroup (this machine's /proc/self/cgroup, whatever
// Root), which a plain child inherits: the cgroup v2 one, else the first
// controller's by name.
func (c Cgroupfs) own() string {
	cgs, err := host.NewRoot("/").ProcCgroups("/proc/self/cgroup")
	if err != nil {
		return "(unknown: " + err.Error() + ")"
	}
	if cg, ok := cgs[""]; ok {
		return cg
	}
	if len(cgs) == 0 {
		return "(unknown: /proc/self/cgroup lists none)"
	}
	return cgs[slices.Min(slices.Collect(maps.Keys(cgs)))]
}

// Cgroup is d's cgroup of its own, CgroupParent/<user>-<key>.
func (Cgroupfs) Cgroup(d Daemon) string { return "/" + CgroupParent + "/" + Name(d) }

// Done removes d's cgroup (empty once the daemon and its servers are
// gone); none is no error.
func (c Cgroupfs) Done(_ context.Context, d Daemon) error {
	dir := c.dir(d)
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("mps: removing cgroup %s: %w", dir, err)
	}
	return nil
}
