package vmnode

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Image is a built test node image: a folder of the image cache
// ($GPUPREP_VM_CACHE/<key>, written by test/vm/build-image.sh).
type Image struct {
	Dir    string // the image folder
	Disk   string // rootfs.img: raw ext4, never written to (boots use an overlay)
	Kernel string // vmlinuz
	Initrd string // initrd.img
	Key    string // id_ed25519: root's (and alice's) SSH key, mode 0600
	// VMScript is test/vm/vm.sh, which starts qemu (the VM's hardware).
	VMScript string
	// Info is image.env: KEY, BUILT, BUILD_SECONDS, KERNEL_VERSION,
	// SLURM_VERSION, SYSTEMD_VERSION, MIRROR, SUITE.
	Info map[string]string
}

// RepoRoot is the gpuprep repository holding the working directory: the
// nearest parent with a go.mod of module gpuprep (go test runs in the
// package's folder).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("vmnode: %w", err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(bytes.TrimSpace(b), []byte("module gpuprep")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("vmnode: no gpuprep go.mod above the working directory")
		}
		dir = parent
	}
}

// Build runs test/vm/build-image.sh, which returns at once with the cached
// image when its inputs are unchanged and otherwise builds it (as root, a few
// minutes; it installs qemu and debootstrap on the host when missing). Its
// progress lines go to stderr. Without a deadline in ctx it gets 30 minutes.
// The script inherits this process's environment, so GPUPREP_VM_RELEASE
// (bookworm by default, trixie or sid) picks the Debian release, and so the
// Slurm, systemd and kernel of the image; Info's SUITE and SLURM_VERSION say
// which one was built.
func Build(ctx context.Context) (Image, error) {
	root, err := RepoRoot()
	if err != nil {
		return Image{}, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Minute)
		defer cancel()
	}
	script := filepath.Join(root, "test", "vm", "build-image.sh")
	cmd := exec.CommandContext(ctx, "bash", script)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = io.MultiWriter(&stderr, os.Stderr)
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", err, ctx.Err())
		}
		return Image{}, fmt.Errorf("vmnode: %s: %w\n%s", script, err, tail(stderr.String(), 30))
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	return OpenImage(lines[len(lines)-1], filepath.Join(root, "test", "vm", "vm.sh"))
}

// OpenImage reads the image in dir (a folder of the image cache); vmScript is
// test/vm/vm.sh.
func OpenImage(dir, vmScript string) (Image, error) {
	img := Image{
		Dir:      dir,
		Disk:     filepath.Join(dir, "rootfs.img"),
		Kernel:   filepath.Join(dir, "vmlinuz"),
		Initrd:   filepath.Join(dir, "initrd.img"),
		Key:      filepath.Join(dir, "id_ed25519"),
		VMScript: vmScript,
	}
	for _, p := range []string{img.Disk, img.Kernel, img.Initrd, img.Key, vmScript} {
		if _, err := os.Stat(p); err != nil {
			return Image{}, fmt.Errorf("vmnode: image %s: %w", dir, err)
		}
	}
	info, err := readEnvFile(filepath.Join(dir, "image.env"))
	if err != nil {
		return Image{}, err
	}
	img.Info = info
	return img, nil
}

// readEnvFile reads KEY=VALUE lines (no quoting), skipping comments.
func readEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("vmnode: %w", err)
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			m[k] = v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("vmnode: %s: %w", path, err)
	}
	return m, nil
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
