package host

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok")
	os.WriteFile(ok, []byte("12345"), 0o644)
	if b, fi, err := ReadRegular(ok, 5); err != nil || string(b) != "12345" || fi.Size() != 5 {
		t.Errorf("ok: %q %v", b, err)
	}
	var big *TooLargeError
	if _, _, err := ReadRegular(ok, 4); !errors.As(err, &big) || big.Max != 4 {
		t.Errorf("over the limit: %v", err)
	}
	if _, _, err := ReadRegular(filepath.Join(dir, "absent"), 4); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("absent: %v", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, fifo, "/dev/zero"} {
		done := make(chan error, 1)
		go func() { _, _, err := ReadRegular(p, 1<<20); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) {
				t.Errorf("%s: %v", p, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: ReadRegular hangs", p)
		}
	}
}
