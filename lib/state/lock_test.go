package state

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLockSerialisesGoroutines: never two holders at once.
func TestLockSerialisesGoroutines(t *testing.T) {
	sp := newSpool(t)
	var inside, entries atomic.Int32
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				unlock, err := sp.Lock(ctx)
				cancel()
				if err != nil {
					t.Error(err)
					return
				}
				if n := inside.Add(1); n != 1 {
					t.Errorf("%d holders at once", n)
				}
				entries.Add(1)
				time.Sleep(100 * time.Microsecond)
				inside.Add(-1)
				if err := unlock(); err != nil {
					t.Error(err)
				}
				if err := unlock(); err != nil {
					t.Errorf("second unlock: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	if entries.Load() != 160 {
		t.Fatalf("%d entries, want 160", entries.Load())
	}
}

func TestLockTimesOutNamingHolder(t *testing.T) {
	sp := newSpool(t)
	unlock, err := sp.Lock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = sp.Lock(ctx)
	if el := time.Since(start); el < 50*time.Millisecond || el > 2*time.Second {
		t.Fatalf("gave up after %v, want about 60ms", el)
	}
	wantErr(t, err, filepath.Join(sp.Dir(), "lock"), "pid "+strconv.Itoa(os.Getpid()), "deadline exceeded")
	unlock()
	again, err := sp.Lock(t.Context())
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	again()
}

func TestLockRefusesSymlink(t *testing.T) {
	sp := newSpool(t)
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("keep"), 0o644)
	os.Symlink(victim, filepath.Join(sp.Dir(), "lock"))
	_, err := sp.Lock(t.Context())
	wantErr(t, err, "lock", "symlink")
	if readFile(t, victim) != "keep" {
		t.Fatal("victim changed")
	}
}

// TestLockAcrossProcesses: a lock held by another process blocks us, the
// timeout names that process, and its unlock lets us in.
func TestLockAcrossProcesses(t *testing.T) {
	sp := newSpool(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldLock$")
	cmd.Env = append(os.Environ(), "GPUPREP_HOLD_LOCK="+sp.Dir())
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("helper said %q, %v", line, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = sp.Lock(ctx)
	wantErr(t, err, "pid "+strconv.Itoa(cmd.Process.Pid))

	stdin.Close() // the helper unlocks and exits
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	unlock, err := sp.Lock(ctx2)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	cmd.Wait()
}

// TestHelperHoldLock is the other process of TestLockAcrossProcesses.
func TestHelperHoldLock(t *testing.T) {
	dir := os.Getenv("GPUPREP_HOLD_LOCK")
	if dir == "" {
		t.Skip("helper process only")
	}
	sp, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := sp.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("locked\n")
	bufio.NewReader(os.Stdin).ReadString('\n') // until the parent closes stdin
	unlock()
}

// TestTryLock: a named lock is taken without waiting, a second taker is
// told at once that it is held (ErrLocked, naming the holder), it is
// independent of the node lock, and a symlink in its place is refused.
func TestTryLock(t *testing.T) {
	sp := newSpool(t)
	unlock, err := sp.TryLock("healthcheck.lock")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = sp.TryLock("healthcheck.lock")
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("second TryLock: %v", err)
	}
	if waited := time.Since(start); waited > time.Second {
		t.Errorf("TryLock waited %s", waited)
	}
	node, err := sp.Lock(t.Context())
	if err != nil {
		t.Fatalf("the node lock is another lock: %v", err)
	}
	node()
	unlock()
	again, err := sp.TryLock("healthcheck.lock")
	if err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	again()
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("keep"), 0o600)
	os.Symlink(victim, filepath.Join(sp.Dir(), "other.lock"))
	if _, err := sp.TryLock("other.lock"); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("symlink: %v", err)
	}
	if _, err := sp.TryLock("../x.lock"); err == nil {
		t.Error("a name with a path was taken")
	}
}
