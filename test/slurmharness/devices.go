package slurmharness

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
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
// Links is "" where slurmd prints "(null)" (no Links=); Type is "" for
// "(null)". For a File= range (nvidia[0-3]) slurmd prints one line with
// Count=4; for a MIG line (MultipleFiles=) Index is the last file's minor.
type GresLine struct {
	Name, Type   string
	Count, Index int
	ID           string
	File         string
	Cores        string
	CoreCnt      int
	Links        string
	Flags        string
	Raw          string
}

// ParseSlurmdG returns the GRES lines of `slurmd -G` output; other lines
// (warnings, errors) are ignored (find them in the text).
func ParseSlurmdG(out string) ([]GresLine, error) {
	var gs []GresLine
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		l = strings.TrimPrefix(l, "slurmd: ")
		if !strings.HasPrefix(l, "Gres ") {
			continue
		}
		g := GresLine{Raw: l}
		for _, tok := range strings.Fields(strings.TrimPrefix(l, "Gres ")) {
			k, v, ok := strings.Cut(tok, "=")
			if !ok {
				continue // "(null)" where Links= would be
			}
			if v == "(null)" {
				v = ""
			}
			var err error
			switch k {
			case "Name":
				g.Name = v
			case "Type":
				g.Type = v
			case "Count":
				g.Count, err = strconv.Atoi(v)
			case "Index":
				g.Index, err = strconv.Atoi(v)
			case "ID":
				g.ID = v
			case "File":
				g.File = v
			case "Cores":
				g.Cores = v
			case "CoreCnt":
				g.CoreCnt, err = strconv.Atoi(v)
			case "Links":
				g.Links = v
			case "Flags":
				g.Flags = v
			}
			if err != nil {
				return nil, fmt.Errorf("slurmd -G line %q: %s: %v", l, k, err)
			}
		}
		gs = append(gs, g)
	}
	return gs, nil
}
