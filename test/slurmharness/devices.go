package slurmharness

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"gpuprep/internal/slurmcores"
)

// NvidiaMajor is the character major of /dev/nvidia<N>.
const NvidiaMajor = 195

// CapsMajor is the major used for fake nvidia-caps devices; on a real node it
// is dynamic (see /proc/devices, "nvidia-caps"), and slurmd does not care.
const CapsMajor = 239

// MakeDevices makes dir/nvidia<N> character devices (major 195, minor N) for
// each minor, as gres.conf File= needs (slurmd stats every file). Needs root.
// It returns the paths in the order given.
func MakeDevices(t testing.TB, dir string, minors []int) []string {
	t.Helper()
	var paths []string
	for _, m := range minors {
		p := filepath.Join(dir, "nvidia"+strconv.Itoa(m))
		mknod(t, p, NvidiaMajor, m)
		paths = append(paths, p)
	}
	return paths
}

// MakeCapDevices makes dir/nvidia-caps/nvidia-cap<N> character devices for
// MIG gres.conf lines (MultipleFiles=/dev/nvidia0,.../nvidia-cap<GI>,
// .../nvidia-cap<CI>) and returns their paths.
func MakeCapDevices(t testing.TB, dir string, minors []int) []string {
	t.Helper()
	var paths []string
	for _, m := range minors {
		p := filepath.Join(dir, "nvidia-caps", "nvidia-cap"+strconv.Itoa(m))
		mknod(t, p, CapsMajor, m)
		paths = append(paths, p)
	}
	return paths
}

func mknod(t testing.TB, path string, major, minor int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatalf("slurmharness: %v", err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeCharDevice != 0 {
			return
		}
		t.Fatalf("slurmharness: %s exists and is not a character device", path)
	}
	dev := int((uint64(major&0xfff) << 8) | uint64(minor&0xff) | (uint64(minor&^0xff) << 12))
	if err := syscall.Mknod(path, syscall.S_IFCHR|0o666, dev); err != nil {
		t.Fatalf("slurmharness: mknod %s c %d %d: %v (needs root)", path, major, minor, err)
	}
}

// GresLine is one "Gres Name=..." line of `slurmd -G`, e.g.
//
//	slurmd: Gres Name=gpu Type=h100 Count=1 Index=0 ID=7696487 File=/d/nvidia0 Cores=0 CoreCnt=2 Links=-1,4,4,4
//
// (internal/slurmcores reads it, for every Slurm release's prefix).
type GresLine = slurmcores.Gres

// ParseSlurmdG returns the GRES lines of `slurmd -G` output; other lines
// (warnings, errors) are ignored (find them in the text).
func ParseSlurmdG(out string) ([]GresLine, error) { return slurmcores.ParseSlurmdG(out) }
