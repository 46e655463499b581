// Package state is gpuprep's spool directory (default /var/lib/gpuprep):
// small JSON files written atomically, append-only JSON-lines files, and the
// node lock. The prolog and epilog run as root on every node, so the spool
// refuses to be a symlink or writable by anyone but its owner, never follows
// symlinks inside it, and a file is either its old or its new content, never
// half of each.
package state
