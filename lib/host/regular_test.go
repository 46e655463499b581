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

// TestReadHead: the start of a file of any size, at most max bytes; a
// short file whole; a FIFO refused at once (ErrNotRegular), never waited
// on; a missing file an error.
func TestReadHead(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, []byte("0123456789abcdef"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, fi, err := ReadHead(big, 10); err != nil || string(b) != "0123456789" || fi.Size() != 16 {
		t.Errorf("ReadHead(16 bytes, 10) = %q, %v, %v; want the first 10 and the size", b, fi, err)
	}
	if b, _, err := ReadHead(big, 100); err != nil || string(b) != "0123456789abcdef" {
		t.Errorf("ReadHead(16 bytes, 100) = %q, %v; want all of it", b, err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, _, err := ReadHead(fifo, 10); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegular) {
			t.Errorf("ReadHead(FIFO) = %v; want ErrNotRegular", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReadHead blocked on a FIFO")
	}
	if _, _, err := ReadHead(filepath.Join(dir, "none"), 10); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadHead(missing) = %v", err)
	}
}
