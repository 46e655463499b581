package mps

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"gpuprep/lib/host"
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
// daemon's environ, which only root can): under root r, the pipe
// directory <base>/<user>-<key>/pipe must be a directory, not a symlink,
// that nobody but its owner may write, owned by root with an ACL entry
// that lets uid search it (Grant; or, as an older release left it for a
// daemon it started, owned by uid), holding the daemon's control socket;
// the log directory must be a directory. It returns the
// node paths (Dirs(base, ...)) for CUDA_MPS_PIPE_DIRECTORY and
// CUDA_MPS_LOG_DIRECTORY. A missing pipe directory or socket is an error
// wrapping ErrNoDaemon; a symlink (ErrSymlink), another owner or a
// writable directory is an error naming it. A socket left by a daemon
// that died is not told apart: a client that cannot connect runs without
// MPS, as the CUDA driver does when no daemon listens.
func Lookup(r host.Root, base, user string, uid int, uuids []string) (Paths, error) {
	key, err := Key(uuids)
	if err != nil {
		return Paths{}, err
	}
	p, err := Dirs(base, user, key)
	if err != nil {
		return Paths{}, err
	}
	st, err := lstat(r.Path(p.Pipe))
	if errors.Is(err, fs.ErrNotExist) {
		return Paths{}, fmt.Errorf("mps: %w for %s on %v (no %s)", ErrNoDaemon, user, uuids, p.Pipe)
	}
	if err != nil {
		return Paths{}, err
	}
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return Paths{}, fmt.Errorf("mps: refusing %s: %w", p.Pipe, ErrSymlink)
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return Paths{}, fmt.Errorf("mps: %s is not a directory; refusing", p.Pipe)
	case st.Mode&0o022 != 0:
		return Paths{}, fmt.Errorf("mps: %s is writable by others (mode %#o); refusing", p.Pipe, st.Mode&0o7777)
	case st.Uid == 0:
		if err := lets(r.Path(p.Pipe), p.Pipe, uid); err != nil {
			return Paths{}, err
		}
	case int(st.Uid) != uid:
		return Paths{}, fmt.Errorf("mps: %s belongs to uid %d, neither root nor %s: it does not let uid %d in: %w", p.Pipe, st.Uid, user, uid, ErrNotYours)
	}
	sock, err := lstat(r.Path(p.Pipe + "/" + controlSocket))
	if errors.Is(err, fs.ErrNotExist) {
		return Paths{}, fmt.Errorf("mps: %w for %s on %v (no %s socket in %s)", ErrNoDaemon, user, uuids, controlSocket, p.Pipe)
	}
	if err != nil {
		return Paths{}, err
	}
	if sock.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return Paths{}, fmt.Errorf("mps: %s/%s is not a socket; refusing", p.Pipe, controlSocket)
	}
	lg, err := lstat(r.Path(p.Log))
	if err != nil {
		return Paths{}, err
	}
	if lg.Mode&unix.S_IFMT != unix.S_IFDIR {
		return Paths{}, fmt.Errorf("mps: %s is not a directory; refusing", p.Log)
	}
	return p, nil
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

// lstat is unix.Lstat with an *os.PathError.
func lstat(path string) (*unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return nil, &os.PathError{Op: "lstat", Path: path, Err: err}
	}
	return &st, nil
}
