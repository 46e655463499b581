package state

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"gpuprep/lib/crashpoint"
	"gpuprep/lib/dirfd"
)

// Lock takes the spool's exclusive lock: flock on "<dir>/lock" (created 0600,
// never through a symlink), polled without blocking until ctx ends, so a
// stuck holder cannot hang a prolog past its deadline. The holder writes
// "<pid> <program> <RFC3339 time>" into the file; a timeout error quotes it
// and says whether that process is still alive. Each call opens its own
// descriptor, so goroutines of one process exclude each other too. unlock
// clears the holder line and releases the lock; calling it again does nothing.
func (s *Spool) Lock(ctx context.Context) (unlock func() error, err error) {
	return s.lockNamed(ctx, LockName)
}

// ErrLocked is the error of a lock another process holds past the caller's
// wait.
var ErrLocked = errors.New("held by another process")

// TryLock takes the spool's lock file name (not the node lock: a lock of its
// own, such as the one that keeps two gpuprep-health runs apart) without
// waiting. When another process holds it, the error wraps ErrLocked and
// names the holder.
func (s *Spool) TryLock(name string) (unlock func() error, err error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // one attempt
	return s.lockNamed(ctx, name)
}

// LockNamed takes the spool's lock file name (as TryLock), waiting for
// its holder until ctx ends: then the error wraps ErrLocked.
func (s *Spool) LockNamed(ctx context.Context, name string) (unlock func() error, err error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	return s.lockNamed(ctx, name)
}

func (s *Spool) lockNamed(ctx context.Context, name string) (unlock func() error, err error) {
	lockPath := s.path(name)
	if err := s.writable("lock", name); err != nil {
		return nil, err
	}
	fd, err := unix.Openat(s.fd, name, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	switch {
	case errors.Is(err, unix.ELOOP):
		return nil, fmt.Errorf("lock %s: is a symlink; refusing to follow it", lockPath)
	case err != nil:
		return nil, fmt.Errorf("lock %s: %w", lockPath, err)
	}
	if err := checkRegular(fd); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("lock %s: %w", lockPath, err)
	}
	start := time.Now()
	wait := time.Millisecond
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			unix.Close(fd)
			return nil, fmt.Errorf("lock %s: %w", lockPath, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			holder := readHolder(fd)
			unix.Close(fd)
			return nil, fmt.Errorf("lock %s: not acquired after %s (%v): %w: %s", lockPath, time.Since(start).Round(time.Millisecond), ctx.Err(), ErrLocked, holder)
		case <-t.C:
		}
		if wait < 20*time.Millisecond {
			wait *= 2
		}
	}
	crashpoint.Hit("spool-lock", lockPath)
	writeHolder(fd)
	var once sync.Once
	return func() error {
		var err error
		once.Do(func() {
			unix.Ftruncate(fd, 0)
			if uerr := unix.Flock(fd, unix.LOCK_UN); uerr != nil {
				err = fmt.Errorf("unlock %s: %w", lockPath, uerr)
			}
			if cerr := unix.Close(fd); err == nil && cerr != nil {
				err = fmt.Errorf("unlock %s: %w", lockPath, cerr)
			}
		})
		return err
	}, nil
}

// writeHolder records who holds the lock; best effort (a full disk must not
// stop the lock from working).
func writeHolder(fd int) {
	line := fmt.Sprintf("%d %s %s\n", os.Getpid(), filepath.Base(os.Args[0]), time.Now().UTC().Format(time.RFC3339))
	if unix.Ftruncate(fd, 0) == nil {
		unix.Pwrite(fd, []byte(line), 0)
	}
}

// readHolder describes the holder from the lock file's line.
func readHolder(fd int) string {
	b := make([]byte, 256)
	n, _ := unix.Pread(fd, b, 0)
	line := strings.TrimSpace(string(b[:max(n, 0)]))
	f := strings.Fields(line)
	if len(f) == 0 {
		return "an unknown process (no holder recorded yet)"
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return fmt.Sprintf("an unknown process (lock file says %q)", line)
	}
	desc := "pid " + f[0]
	if len(f) > 1 {
		desc += " (" + f[1] + ")"
	}
	if len(f) > 2 {
		desc += " since " + f[2]
	}
	if !dirfd.ProcessAlive(pid) {
		desc += ", which has exited (the line may be stale: a new holder may not have written its own yet)"
	}
	return desc
}
