package mps

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"gpuprep/lib/dirfd"
	"gpuprep/lib/host"
	"gpuprep/lib/rundir"
)

// ErrNoDaemon is wrapped by Lookup's error when no control daemon of the
// user serves the GPU set: its pipe directory or its control socket is
// missing. ErrNotYours is wrapped when the pipe directory does not let the
// user in.
var (
	ErrNoDaemon = errors.New("no MPS control daemon")
	ErrNotYours = errors.New("not the user's MPS daemon")
)

// controlSocket is the socket the daemon makes in its pipe directory,
// where clients (the CUDA driver) connect.
const controlSocket = "control"

// Lookup finds the control daemon that serves user's clients on the GPU
// set uuids (in CUDA_VISIBLE_DEVICES order; Key) from what the user's own
// process may see, with no exec and no /proc (Exec.Alive reads the
// daemon's environ, which only root can): under root r, the daemon's
// directory <base>/<user>-<key> is opened without following a symlink
// (through the run directory, rundir.OpenReader, where base is in it: each
// directory root's or uid's, writable by its owner alone); in it, the pipe
// directory must be a directory, not a symlink, that nobody but its owner
// may write, owned by root with an ACL entry that lets uid search it
// (Grant; or, as an older release left it for a daemon it started, owned
// by uid), holding the daemon's control socket; the log directory must be
// a directory. It returns the node paths (Dirs(base, ...)) for
// CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY. A missing directory
// or socket is an error wrapping ErrNoDaemon; a symlink (ErrSymlink),
// another owner or a writable directory is an error naming it. A socket
// left by a daemon that died is not told apart: a client that cannot
// connect runs without MPS, as the CUDA driver does when no daemon
// listens.
func Lookup(r host.Root, base, user string, uid int, uuids []string) (Paths, error) {
	key, err := Key(uuids)
	if err != nil {
		return Paths{}, err
	}
	p, err := Dirs(base, user, key)
	if err != nil {
		return Paths{}, err
	}
	dir, err := openDaemonDir(r, base, filepath.Base(p.Dir), uid)
	if errors.Is(err, fs.ErrNotExist) {
		return Paths{}, fmt.Errorf("mps: %w for %s on %v (no %s)", ErrNoDaemon, user, uuids, p.Pipe)
	}
	if err != nil {
		return Paths{}, fmt.Errorf("mps: %w", err)
	}
	defer dir.Close()
	if err := checkPipe(r, dir, p, user, uid, uuids); err != nil {
		return Paths{}, err
	}
	lg, err := dir.Lstat("log")
	if err != nil {
		return Paths{}, err
	}
	if lg.Mode&unix.S_IFMT != unix.S_IFDIR {
		return Paths{}, fmt.Errorf("mps: %s is not a directory; refusing", p.Log)
	}
	return p, nil
}

// openDaemonDir opens the daemon's directory name in base under r for a
// reader of uid: through the run directory where base is in it, each
// directory root's or uid's and writable by its owner alone.
func openDaemonDir(r host.Root, base, name string, uid int) (*dirfd.Dir, error) {
	trust := func(st *unix.Stat_t) string {
		switch {
		case st.Uid != 0 && int(st.Uid) != uid && int(st.Uid) != os.Geteuid():
			return fmt.Sprintf("owned by uid %d, neither root nor %d", st.Uid, uid)
		case st.Mode&0o022 != 0:
			return fmt.Sprintf("writable by others (mode %#o)", st.Mode&0o7777)
		}
		return ""
	}
	if sub, ok := strings.CutPrefix(base, rundir.Path+"/"); ok {
		return rundir.OpenReader(r, sub+"/"+name, trust)
	}
	b, err := dirfd.Open(r.Path(base))
	if err != nil {
		return nil, err
	}
	defer b.Close()
	return b.Walk(name, dirfd.Walk{})
}

// checkPipe checks the pipe directory of p (in the daemon's directory
// dir) and its control socket, for uid (Lookup).
func checkPipe(r host.Root, dir *dirfd.Dir, p Paths, user string, uid int, uuids []string) error {
	st, err := dir.Lstat("pipe")
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("mps: %w for %s on %v (no %s)", ErrNoDaemon, user, uuids, p.Pipe)
	}
	if err != nil {
		return err
	}
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return fmt.Errorf("mps: refusing %s: %w", p.Pipe, ErrSymlink)
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return fmt.Errorf("mps: %s is not a directory; refusing", p.Pipe)
	case st.Mode&0o022 != 0:
		return fmt.Errorf("mps: %s is writable by others (mode %#o); refusing", p.Pipe, st.Mode&0o7777)
	case st.Uid == 0:
		if err := lets(r.Path(p.Pipe), p.Pipe, uid); err != nil {
			return err
		}
	case int(st.Uid) != uid:
		return fmt.Errorf("mps: %s belongs to uid %d, neither root nor %s: it does not let uid %d in: %w", p.Pipe, st.Uid, user, uid, ErrNotYours)
	}
	sock, err := dir.Lstat("pipe/" + controlSocket) // pipe is no symlink: checked above
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("mps: %w for %s on %v (no %s socket in %s)", ErrNoDaemon, user, uuids, controlSocket, p.Pipe)
	}
	if err != nil {
		return err
	}
	if sock.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return fmt.Errorf("mps: %s/%s is not a socket; refusing", p.Pipe, controlSocket)
	}
	return nil
}

// lets checks that the ACL of the pipe directory (path; node path full)
// gives uid search access: an entry user:<uid> with x, under a mask
// with x (Grant's).
func lets(path, full string, uid int) error {
	b := make([]byte, 1024)
	n, err := unix.Lgetxattr(path, aclXattr, b)
	if errors.Is(err, unix.ENODATA) || errors.Is(err, unix.EOPNOTSUPP) {
		return fmt.Errorf("mps: %s has no ACL that lets uid %d in: %w", full, uid, ErrNotYours)
	}
	if err != nil {
		return &os.PathError{Op: "getfacl", Path: full, Err: err}
	}
	if !aclSearch(b[:n], uid) {
		return fmt.Errorf("mps: %s: its ACL does not let uid %d in: %w", full, uid, ErrNotYours)
	}
	return nil
}
