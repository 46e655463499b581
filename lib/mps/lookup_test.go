package mps

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"gpuprep/lib/host"
)

const testGPU = "GPU-1e0d1697-fb12-2a4f-76c6-69699b1022c5"

// daemonRoot is a fixture root holding what a running daemon of user for
// uuids leaves in DefaultBase: the pipe directory, this process's (root's
// on a node), with Grant's ACL entry for this process's uid and the
// control socket, and the log directory. It returns the root and the node paths.
func daemonRoot(t *testing.T, user string, uuids ...string) (string, Paths) {
	t.Helper()
	key, err := Key(uuids)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Dirs(DefaultBase, user, key)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for _, d := range []string{p.Pipe, p.Log} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mknod(filepath.Join(root, p.Pipe, "control"), unix.S_IFSOCK|0o666, 0); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(filepath.Join(root, p.Pipe), unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := grantSearch(fd, p.Pipe, os.Getuid()); err != nil {
		t.Fatal(err)
	}
	return root, p
}

// Lookup finds the daemon a user's rank may use from its directories
// alone, and refuses every directory that is not the one Grant made.
func TestLookup(t *testing.T) {
	uid := os.Getuid()
	root, p := daemonRoot(t, "alice", testGPU)
	r := host.NewRoot(root)
	got, err := Lookup(r, DefaultBase, "alice", uid, []string{testGPU})
	if err != nil || got != p || !strings.HasPrefix(got.Pipe, DefaultBase+"/alice-") {
		t.Fatalf("Lookup = %+v, %v; want %+v", got, err, p)
	}
	for _, c := range []struct {
		name  string
		user  string
		uid   int
		uuids []string
		spoil func(t *testing.T)
		want  error  // errors.Is
		text  string // else the error's text holds this
	}{
		{name: "another GPU", user: "alice", uid: uid, uuids: []string{"GPU-00000000-0000-0000-0000-000000000000"}, want: ErrNoDaemon},
		{name: "another user", user: "bob", uid: uid, uuids: []string{testGPU}, want: ErrNoDaemon},
		{name: "another uid", user: "alice", uid: uid + 1, uuids: []string{testGPU}, want: ErrNotYours},
		{name: "bad UUID", user: "alice", uid: uid, uuids: []string{"0"}, text: "want GPU-... or MIG-..."},
		{name: "no socket", user: "alice", uid: uid, uuids: []string{testGPU}, want: ErrNoDaemon, spoil: func(t *testing.T) {
			os.Remove(filepath.Join(root, p.Pipe, "control"))
		}},
		{name: "socket is a file", user: "alice", uid: uid, uuids: []string{testGPU}, text: "not a socket", spoil: func(t *testing.T) {
			os.Remove(filepath.Join(root, p.Pipe, "control"))
			os.WriteFile(filepath.Join(root, p.Pipe, "control"), nil, 0o666)
		}},
		{name: "writable pipe directory", user: "alice", uid: uid, uuids: []string{testGPU}, text: "writable by others", spoil: func(t *testing.T) {
			os.Chmod(filepath.Join(root, p.Pipe), 0o777)
		}},
		{name: "no ACL", user: "alice", uid: uid, uuids: []string{testGPU}, want: ErrNotYours, spoil: func(t *testing.T) {
			if os.Getuid() != 0 {
				t.Skip("a pipe directory of the user's own is what an older release left: accepted")
			}
			unix.Removexattr(filepath.Join(root, p.Pipe), aclXattr)
		}},
		{name: "pipe directory is a symlink", user: "alice", uid: uid, uuids: []string{testGPU}, want: ErrSymlink, spoil: func(t *testing.T) {
			elsewhere := t.TempDir()
			unix.Mknod(filepath.Join(elsewhere, "control"), unix.S_IFSOCK|0o666, 0)
			os.RemoveAll(filepath.Join(root, p.Pipe))
			os.Symlink(elsewhere, filepath.Join(root, p.Pipe))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.spoil != nil {
				root, p = daemonRoot(t, "alice", testGPU)
				r = host.NewRoot(root)
				c.spoil(t)
			}
			_, err := Lookup(r, DefaultBase, c.user, c.uid, c.uuids)
			switch {
			case err == nil:
				t.Fatalf("Lookup found a daemon")
			case c.want != nil && !errors.Is(err, c.want):
				t.Errorf("error %v: want %v", err, c.want)
			case c.want == nil && !strings.Contains(err.Error(), c.text):
				t.Errorf("error %v: want %q", err, c.text)
			}
		})
	}
}
