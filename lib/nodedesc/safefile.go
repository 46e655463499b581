package nodedesc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"gpuprep/lib/dirfd"
	"gpuprep/lib/host"
	"gpuprep/lib/rundir"
)

// The files under /run/gpuprep are written by root and read by every user:
// a user must not be able to plant one or redirect a write. lib/rundir owns
// the directory: the writer opens it once (rundir.Open: root's 0755, never
// through a symlink, writable by root alone) and writes each file under a
// temporary name renamed over the target (rundir.Dir.WriteAtomic); a
// symlink in the target's place is refused. A reader walks the same way
// (rundir.OpenReader) and believes a directory or file only as trust says.
//
// Inside an enroot/pyxis user namespace the host's root and the host's
// nobody both read as the overflow uid, so a reader there cannot tell
// them apart: the protection is that nobody but root can ever create or
// write /run/gpuprep. A tmpfiles.d rule creates it root's 0755 at boot
// (examples/tmpfiles.d/gpuprep.conf), and the prolog (rundir.Open)
// creates it, or moves aside one that another user owns or can write.

// maxFile bounds a description or notice read: a description of a large
// node is some tens of KiB.
const maxFile = 4 << 20

// overflowUID is the owner a user namespace shows for a file whose owner
// it does not map (/proc/sys/kernel/overflowuid, 65534 unless changed):
// inside an enroot/pyxis container the host's root-owned description
// shows as owned by it, and so does a file of the host's nobody.
const overflowUID = 65534

// uidMapPath is the calling process's user namespace uid mapping.
const uidMapPath = "/proc/self/uid_map"

// trust is whose directories and files a reader believes: root's, its
// own, and the overflow uid's only inside a user namespace, where root's
// show as it. Outside one, a file of uid 65534 is nobody's, not root's.
type trust struct {
	r      host.Root
	userns int // 0 not read yet, 1 in a user namespace, -1 not
}

// inUserNS says whether the reader runs in a user namespace: its
// /proc/self/uid_map (read through the root) is not the initial
// namespace's identity map "0 0 4294967295". An unreadable map is taken
// as no user namespace: the stricter reading.
func (t *trust) inUserNS() bool {
	if t.userns == 0 {
		t.userns = -1
		if b, err := t.r.ReadFile(uidMapPath); err == nil {
			if f := strings.Fields(string(b)); len(f) > 0 && !slices.Equal(f, []string{"0", "0", "4294967295"}) {
				t.userns = 1
			}
		}
	}
	return t.userns > 0
}

// problem says why the reader cannot trust st (a directory or file at
// full): an owner other than root, the reader or (in a user namespace)
// the overflow uid, or writable by others than its owner; "" when it can.
func (t *trust) problem(st *unix.Stat_t) string {
	switch uid := st.Uid; {
	case uid == 0 || int(uid) == os.Geteuid():
	case uid == overflowUID && t.inUserNS():
	case uid == overflowUID:
		return fmt.Sprintf("owned by uid %d (nobody), not root; outside a user namespace only root's is read", uid)
	default:
		return fmt.Sprintf("owned by uid %d, not root", uid)
	}
	if st.Mode&0o022 != 0 {
		return fmt.Sprintf("writable by others (mode %#o)", st.Mode&0o777)
	}
	return ""
}

// missingError is the error for a file under /run/gpuprep that does not
// exist: "<path>: node description missing", said once, and both ErrMissing
// and fs.ErrNotExist for errors.Is.
type missingError struct{ path string }

func (e *missingError) Error() string { return e.path + ": " + ErrMissing.Error() }

func (e *missingError) Is(target error) bool { return target == ErrMissing || target == fs.ErrNotExist }

// readTrusted reads the file at node path p (under runDir) for a reader
// that must trust it: each directory from /run/gpuprep down and the file
// are opened without following a symlink and must be trusted
// (trust.problem; lib/rundir's OpenReader, whose format file is checked
// too); the file must be regular. A missing file or directory is an error
// wrapping ErrMissing (and fs.ErrNotExist); an untrusted one wraps
// ErrStale.
func readTrusted(r host.Root, p string) ([]byte, error) {
	full := r.Path(p)
	t := &trust{r: r}
	dir, name := path.Split(strings.TrimPrefix(p, runDir+"/"))
	d, err := rundir.OpenReader(r, strings.TrimSuffix(dir, "/"), t.problem)
	if err != nil {
		return nil, readError(full, err)
	}
	defer d.Close()
	b, err := d.ReadFile(name, dirfd.Read{Max: maxFile, Check: rundir.FileCheck(d, name, t.problem)})
	if err != nil {
		return nil, readError(full, err)
	}
	return b, nil
}

// readError words the error of a read of full (readTrusted): missing,
// stale (a symlink, not a regular file, untrusted, a newer run directory)
// or too large.
func readError(full string, err error) error {
	var ue *rundir.UntrustedError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &missingError{path: full}
	case errors.As(err, &ue) && ue.File:
		return fmt.Errorf("%s: %w: %s", ue.Path, ErrStale, ue.Why)
	case errors.As(err, &ue):
		return fmt.Errorf("%s: %w: directory %s", ue.Path, ErrStale, ue.Why)
	case errors.Is(err, dirfd.ErrSymlink), errors.Is(err, rundir.ErrNewer):
		return fmt.Errorf("%w: %w", ErrStale, err)
	case errors.Is(err, dirfd.ErrNotRegular):
		return fmt.Errorf("%s: %w: not a regular file", full, ErrStale)
	case errors.Is(err, dirfd.ErrTooLarge):
		return fmt.Errorf("%s: larger than %d bytes", full, maxFile)
	}
	return err
}
