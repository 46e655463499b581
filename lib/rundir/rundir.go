// Package rundir owns gpuprep's run directory, /run/gpuprep (a tmpfs: a
// reboot empties it, as it ends every job): what gpuprep keeps there for
// the length of a boot, written by root and read by root, srunwrap (as the
// job's user) and irqbalance's policy script:
//
//	format              the directory's format version (format.go)
//	node-description    the node for srunwrap (lib/nodedesc)
//	jobs/<id>           a job's notices for its user (lib/nodedesc)
//	irq-placed          the IRQs placed and what each held (lib/knob, lib/irq)
//	mps/<user>-<key>/   the MPS daemons' directories (lib/mps)
//	units/<unit>        the systemd units whose drop-in gpuprep made (lib/isolate)
//
// The hooks open it once per run (Open) as a directory descriptor, and
// every file in it is read, written and removed relative to that
// descriptor, never by a path and never through a symlink (lib/dirfd).
// Open checks it is the writer's (root's) and that nobody else can write
// it. One that is not (another user's, writable by others) may hold files
// a user planted, which a reader in a user namespace could not tell from
// root's: it is moved aside and made afresh, but only when no job holds
// settings whose state may be in it (Options.Held); else Open fails,
// saying why, so that the prolog fails rather than orphan those jobs'
// state. A symlink in its place is refused, never moved: only root can
// write /run.
//
// Every hook removes what killed runs and gone jobs left in it (Sweep,
// nodedesc.ForgetNotices) once it has finished an interrupted run and
// released dead jobs.
//
// Readers that are not its writer (srunwrap) open it with OpenReader and
// their own trust rule.
package rundir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"gpuprep/lib/dirfd"
	"gpuprep/lib/host"
)

// Path is the run directory, a node path under a host.Root.
const Path = "/run/gpuprep"

// dirMode is the mode of the run directory and of the directories in it
// that readers use: root's, readable by all, writable by root alone.
const dirMode = 0o755

// Options says how Open treats the run directory.
type Options struct {
	// Held lists what holds settings whose state may be in the run
	// directory (the jobs of this boot with a record in the spool, an
	// interrupted run's journal). An untrusted run directory, or
	// directory in it, is moved aside and made afresh only when Held
	// lists nothing; nil Held moves nothing aside (Open refuses).
	Held func() ([]string, error)
	// NoCreate makes a missing run directory an error wrapping
	// fs.ErrNotExist instead of making it (a caller that only removes).
	NoCreate bool
}

// Dir is the run directory, open. Its methods take names relative to it
// ("irq-placed", "jobs/5"); every directory on the way is opened without
// following a symlink and must be the writer's.
type Dir struct {
	dir      *dirfd.Dir // nil: a read-only view of a missing directory
	path     string     // host path, for messages
	readOnly bool
	opt      Options
	format   int
	moved    []string
}

// Open opens root's run directory for its writer (root: the hooks),
// making it root's 0755 (and /run, on a fixture root that lacks it) when
// it is missing, with its format file. A directory of root's whose mode
// the umask cut is given 0755. One that another user owns or others can
// write is moved aside (within /run, ".gpuprep.untrusted-<time>": kept for
// the admin to look at) and made afresh when opt.Held lists nothing, else
// refused with an *UntrustedError saying who holds settings. One of a
// newer format than Format is refused (ErrNewer), untouched. What was
// moved where is in Moved.
func Open(r host.Root, opt Options) (*Dir, error) {
	d := &Dir{path: r.Path(Path), opt: opt}
	run, err := openRun(r, !opt.NoCreate)
	if err != nil {
		return nil, err
	}
	defer run.Close()
	var made bool
	if d.dir, made, err = d.openSub(run, base, dirMode); err != nil {
		return nil, err
	}
	if d.format, err = d.stampOrRead(made); err == nil && !opt.NoCreate {
		err = d.dir.SetMode(dirMode, "run")
	}
	if err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// base is the run directory's name in /run.
const base = "gpuprep"

// openRun opens root's /run (by its path: a directory only root can
// write), making it on a fixture root that lacks it.
func openRun(r host.Root, create bool) (*dirfd.Dir, error) {
	run, err := dirfd.Open(r.Path("/run"))
	if err == nil || !create || !errors.Is(err, fs.ErrNotExist) {
		return run, err
	}
	top, err := dirfd.Open(r.Path("/"))
	if err != nil {
		return nil, err
	}
	defer top.Close()
	return top.Walk("run", dirfd.Walk{Mkdir: true, Mode: dirMode, Op: "run"})
}

// Path is the run directory's path on this machine (the root's), for
// messages.
func (d *Dir) Path() string { return d.path }

// Format is the format version the run directory was found in (0: no
// format file, as release 0.1.0 left it) or made in.
func (d *Dir) Format() int { return d.format }

// Moved says, one line each, what Open and MkdirAt moved aside (or, read
// only, would move aside) and why, since the last call.
func (d *Dir) Moved() []string {
	m := d.moved
	d.moved = nil
	return m
}

// Close releases the directory's descriptor; later calls do nothing.
func (d *Dir) Close() error {
	if d == nil || d.dir == nil {
		return nil
	}
	return d.dir.Close()
}

// writerProblem says why the writer cannot trust the directory or file
// st: another user owns it, or others can write it; "" when it can.
func writerProblem(st *unix.Stat_t) string {
	if euid := os.Geteuid(); int(st.Uid) != euid {
		return fmt.Sprintf("owned by uid %d, not by the writer (uid %d)", st.Uid, euid)
	}
	if st.Mode&0o022 != 0 {
		return fmt.Sprintf("writable by others (mode %#o)", st.Mode&0o7777)
	}
	return ""
}

// UntrustedError is a directory (or, File set, a file) of the run
// directory that its reader cannot believe: Why says why ("owned by uid
// 1000, not root"); Refused, when set, why it was not moved aside.
type UntrustedError struct {
	Path, Why, Refused string
	File               bool
}

func (e *UntrustedError) Error() string {
	s := "refusing " + e.Path + ": " + e.Why
	if e.Refused != "" {
		s += "; " + e.Refused
	}
	return s
}

// writerCheck is the dirfd check of a directory for the writer.
func writerCheck(d *dirfd.Dir, st *unix.Stat_t) error {
	if why := writerProblem(st); why != "" {
		return &UntrustedError{Path: d.Path(), Why: why}
	}
	return nil
}

// split cuts name into its directory ("" for the run directory itself)
// and its base.
func split(name string) (string, string) {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[:i], name[i+1:]
	}
	return "", name
}
