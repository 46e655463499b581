package nccl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"gpuprep/lib/host"
)

// fixture writes files (node path -> content) and symlinks ("->target")
// under a temporary directory and returns its Root.
func fixture(t *testing.T, files map[string]string) host.Root {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if target, ok := strings.CutPrefix(c, "->"); ok {
			err = os.Symlink(target, full)
		} else {
			err = os.WriteFile(full, []byte(c), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return host.NewRoot(dir)
}

// hca adds an HCA as sysfs lays it out: the class link to the PCI
// function's infiniband/<dev>, ports with state, the uverbs device beside
// it, and /dev/infiniband/uverbsN unless noDev.
func hca(files map[string]string, dev, bus string, uverbs int, noDev bool, states ...string) {
	pci := "/sys/devices/pci0000:00/" + bus
	files["/sys/class/infiniband/"+dev] = "->" + pci + "/infiniband/" + dev
	files[pci+"/infiniband/"+dev+"/device"] = "->" + pci
	for i, st := range states {
		files[fmt.Sprintf("%s/infiniband/%s/ports/%d/state", pci, dev, i+1)] = st + "\n"
	}
	files[fmt.Sprintf("%s/infiniband_verbs/uverbs%d/dev", pci, uverbs)] = fmt.Sprintf("231:%d\n", 192+uverbs)
	if !noDev {
		files[fmt.Sprintf("/dev/infiniband/uverbs%d", uverbs)] = ""
	}
}

// node: mlx5_0, mlx5_1 (port 1 DOWN), mlx5_10, each with its uverbs node.
func node(t *testing.T, extra map[string]string) host.Root {
	files := map[string]string{}
	hca(files, "mlx5_0", "0000:18:00.0", 0, false, "4: ACTIVE")
	hca(files, "mlx5_1", "0000:19:00.0", 1, false, "1: DOWN", "4: ACTIVE")
	hca(files, "mlx5_10", "0000:1a:00.0", 2, false, "4: ACTIVE")
	for k, v := range extra {
		files[k] = v
	}
	return fixture(t, files)
}

// only keeps the findings of one check.
func only(fs []Finding, check string) []string {
	var out []string
	for _, f := range fs {
		if f.Check == check {
			out = append(out, f.Msg)
		}
	}
	return out
}

// wantMsgs checks that got has one message per want entry, each holding
// every fragment of its entry.
func wantMsgs(t *testing.T, got []string, want [][]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("got %d findings, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
		return
	}
	for i, frags := range want {
		for _, f := range frags {
			if !strings.Contains(got[i], f) {
				t.Errorf("finding %d %q lacks %q", i, got[i], f)
			}
		}
	}
}

func TestCheckHCA(t *testing.T) {
	r := node(t, nil)
	for _, tc := range []struct {
		val  string
		want [][]string
	}{
		{"", nil},
		{"=mlx5_0:1,mlx5_10:1", nil},
		{"=mlx5_0,mlx5_1", nil}, // mlx5_1 has an ACTIVE port (2)
		{"mlx5_0:1", nil},
		{"^mlx5_7", nil},            // exclude lists are not checked
		{"mlx5", nil},               // a prefix meant as one
		{"=mlx5_1:2,mlx5_0:1", nil}, // port 2 is up
		{"=mlx5_3:1", [][]string{{`"mlx5_3": no such device here`, "mlx5_0, mlx5_1, mlx5_10"}}},
		{"=mlx5_0:2", [][]string{{"mlx5_0 has no port 2", "ports: 1"}}},
		{"=mlx5_1:1", [][]string{{"port 1 of mlx5_1 is DOWN"}}},
		{"mlx5_1:2", [][]string{{`"mlx5_1" also selects mlx5_10`, "NCCL_IB_HCA==mlx5_1:2"}}},
		{"mlx5_0, mlx5_10", [][]string{{`" mlx5_10": no such device`}}},
		{"mlx5_1:1", [][]string{{"also selects mlx5_10"}, {"port 1 of mlx5_1 is DOWN"}}},
		{"mlx5:2", nil}, // mlx5_1 has port 2
		{"mlx5:3", [][]string{{`no device "mlx5" selects (mlx5_0, mlx5_1, mlx5_10) has port 3`}}},
		{"=mlx5_0:x", [][]string{{`port "x" is not a number`, "port 0"}, {"mlx5_0 has no port 0"}}},
		{"=mlx5_0:", [][]string{{`port "" is not a number`}, {"mlx5_0 has no port 0"}}},
		{"=,", [][]string{{"names no device"}}},
	} {
		t.Run(tc.val, func(t *testing.T) {
			got := only(Check(r, envMap(map[string]string{"NCCL_IB_HCA": tc.val}), unix.RLIM_INFINITY), "nccl_hca")
			wantMsgs(t, got, tc.want)
		})
	}
}

func TestCheckHCAContainer(t *testing.T) {
	// A container that shows the host's sysfs but not /dev/infiniband.
	files := map[string]string{}
	hca(files, "mlx5_0", "0000:18:00.0", 0, true, "4: ACTIVE")
	got := only(Check(fixture(t, files), envMap(map[string]string{"NCCL_IB_HCA": "=mlx5_0:1"}), unix.RLIM_INFINITY), "nccl_hca")
	wantMsgs(t, got, [][]string{{"/dev/infiniband/uverbs0 is not here", "TCP sockets"}})

	// One without any RDMA device in sysfs.
	got = only(Check(fixture(t, map[string]string{"/sys/class/net/eth0/mtu": "1500"}), envMap(map[string]string{"NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1"}), unix.RLIM_INFINITY), "nccl_hca")
	wantMsgs(t, got, [][]string{{"no RDMA device is visible here"}})
}

const topoXML = `<system version="1">
  <cpu numaid="0" affinity="ffffffff" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143">
    <pci busid="0000:18:00.0" class="0x030200"/>
  </cpu>
  <cpu numaid="1" affinity="ffffffff00000000" arch="x86_64"/>
</system>
`

func TestCheckTopoFile(t *testing.T) {
	r := node(t, map[string]string{
		"/etc/nccl/topo.xml":  topoXML,
		"/etc/nccl/bad.xml":   "<system><cpu></system>",
		"/etc/nccl/other.xml": "<graphs/>",
	})
	for _, tc := range []struct {
		val  string
		want [][]string
	}{
		{"", nil},
		{"/etc/nccl/topo.xml", nil},
		{"/etc/nccl/missing.xml", [][]string{{"NCCL_TOPO_FILE=/etc/nccl/missing.xml cannot be read here", "mounted into the container", "falls back to detecting", "2-4x slower"}}},
		{"/etc/nccl/bad.xml", [][]string{{"NCCL_TOPO_FILE=/etc/nccl/bad.xml does not parse", "fails at init", "2-4x slower"}}},
		{"/etc/nccl/other.xml", [][]string{{"does not parse", "<system>"}}},
		{"/etc/nccl", [][]string{{"NCCL_TOPO_FILE=/etc/nccl"}}},
	} {
		t.Run(tc.val, func(t *testing.T) {
			got := only(Check(r, envMap(map[string]string{"NCCL_TOPO_FILE": tc.val}), unix.RLIM_INFINITY), "nccl_topo_file")
			wantMsgs(t, got, tc.want)
		})
	}
}

// A relative NCCL_TOPO_FILE is opened from the working directory, as NCCL
// does.
func TestCheckTopoFileRelative(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	r := fixture(t, map[string]string{filepath.Join(wd, "conf/topo.xml"): topoXML, "/conf/topo.xml": "<bad"})
	if got := only(Check(r, envMap(map[string]string{"NCCL_TOPO_FILE": "conf/topo.xml"}), unix.RLIM_INFINITY), "nccl_topo_file"); len(got) != 0 {
		t.Errorf("relative to the working directory: %q", got)
	}
	got := only(Check(r, envMap(map[string]string{"NCCL_TOPO_FILE": "conf/other.xml"}), unix.RLIM_INFINITY), "nccl_topo_file")
	wantMsgs(t, got, [][]string{{"NCCL_TOPO_FILE=conf/other.xml cannot be read here"}})
}

func TestCheckMemlock(t *testing.T) {
	ib := node(t, nil)
	noIB := fixture(t, map[string]string{"/sys/class/net/eth0/mtu": "1500"})
	for _, tc := range []struct {
		name    string
		r       host.Root
		memlock uint64
		env     map[string]string
		want    [][]string
	}{
		{"unlimited", ib, unix.RLIM_INFINITY, nil, nil},
		{"large", ib, 64 << 30, nil, nil},
		{"at the threshold", ib, MinMemlock, nil, nil},
		{"systemd's 64 KiB", ib, 64 << 10, nil, [][]string{{"is 64 KiB", "LimitMEMLOCK=infinity", "PropagateResourceLimitsExcept=MEMLOCK", "slurm.conf", "slurmd.service"}}},
		{"8 MiB", ib, 8 << 20, nil, [][]string{{"is 8 MiB"}}},
		{"odd size", ib, 1000, nil, [][]string{{"is 1000 bytes"}}},
		{"no RDMA device: nothing NCCL pins counts", noIB, 64 << 10, nil, nil},
		{"IB transport off", ib, 64 << 10, map[string]string{"NCCL_IB_DISABLE": "1"}, nil},
		{"IB transport not off", ib, 64 << 10, map[string]string{"NCCL_IB_DISABLE": "0"}, [][]string{{"64 KiB"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := only(Check(tc.r, envMap(tc.env), tc.memlock), "memlock")
			wantMsgs(t, got, tc.want)
		})
	}
}

func TestCheckOrderAndChecks(t *testing.T) {
	r := node(t, nil)
	env := envMap(map[string]string{"NCCL_TOPO_FILE": "/nope.xml", "NCCL_IB_HCA": "=mlx5_9", "NCCL_P2P_DISABLE": "1"})
	var got []string
	for _, f := range Check(r, env, 64<<10) {
		got = append(got, f.Check)
	}
	if strings.Join(got, ",") != "nccl_topo_file,nccl_hca,memlock,nccl_env" {
		t.Errorf("checks %v", got)
	}
	if fs := Check(r, envMap(nil), unix.RLIM_INFINITY); len(fs) != 0 {
		t.Errorf("a clean environment: %+v", fs)
	}
}

func TestProduct(t *testing.T) {
	r := fixture(t, map[string]string{"/sys/class/dmi/id/product_name": "DGXH100\n"})
	if got := Product(r); got != "DGXH100" {
		t.Errorf("Product = %q", got)
	}
	if got := Product(fixture(t, nil)); got != "" {
		t.Errorf("no DMI: %q", got)
	}
}

func TestMemlock(t *testing.T) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl); err != nil {
		t.Fatal(err)
	}
	if got, err := Memlock(); err != nil || got != rl.Cur {
		t.Errorf("Memlock() = %d, %v; want the soft limit %d", got, err, rl.Cur)
	}
}

// within runs fn and fails the test if it has not returned after 10 s (a
// read blocked on a FIFO never returns): the test fails, it does not hang.
func within(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: still blocked after 10 s", what)
	}
}

// A FIFO (or anything but a regular file) as NCCL_TOPO_FILE, or as the
// prolog's health.nccl_topo_file, is refused at once, naming the file:
// opening a FIFO without a writer would block srunwrap for ever and the
// prolog until its deadline. A symlink is followed, as NCCL follows it, to
// a regular file only; CheckTopoFile reads no file over 16 MiB, and
// srunwrap's check reads the first 64 KiB of any file.
func TestTopoFileNotRegular(t *testing.T) {
	r := fixture(t, map[string]string{
		"/etc/nccl/topo.xml":  topoXML,
		"/etc/nccl/link.xml":  "->topo.xml",
		"/etc/nccl/pipe.link": "->pipe.xml",
	})
	if err := unix.Mkfifo(r.Path("/etc/nccl/pipe.xml"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := r.Path("/etc/nccl/big.xml")
	if err := os.WriteFile(big, nil, 0o644); err != nil || os.Truncate(big, maxTopoFile+1) != nil {
		t.Fatal("cannot make a large file")
	}
	for _, tc := range []struct {
		file, want string
		regular    bool
	}{
		{"/etc/nccl/pipe.xml", "/etc/nccl/pipe.xml: a FIFO, not a regular file", false},
		{"/etc/nccl/pipe.link", "/etc/nccl/pipe.link: a FIFO, not a regular file", false},
		{"/etc/nccl", "/etc/nccl: a directory, not a regular file", false},
		{"/etc/nccl/big.xml", "/etc/nccl/big.xml: larger than 16777216 bytes", true},
	} {
		var err error
		within(t, "CheckTopoFile "+tc.file, func() { _, err = CheckTopoFile(r, tc.file) })
		if err == nil || err.Error() != tc.want || errors.Is(err, host.ErrNotRegular) == tc.regular {
			t.Errorf("CheckTopoFile(%s) = %v, want %q", tc.file, err, tc.want)
		}
		var got []string
		within(t, "Check NCCL_TOPO_FILE="+tc.file, func() {
			got = only(Check(r, envMap(map[string]string{"NCCL_TOPO_FILE": tc.file}), unix.RLIM_INFINITY), "nccl_topo_file")
		})
		if tc.regular {
			// srunwrap reads its first 64 KiB only: zeros, not XML.
			wantMsgs(t, got, [][]string{{"NCCL_TOPO_FILE=" + tc.file + " does not parse as an NCCL topology (no XML tag in its first 64 KiB)"}})
		} else {
			wantMsgs(t, got, [][]string{{"NCCL_TOPO_FILE=" + tc.file + " is a ", ", not a regular file: NCCL may block or fail at init"}})
		}
	}
	if n, err := CheckTopoFile(r, "/etc/nccl/link.xml"); err != nil || n != 2 {
		t.Errorf("a symlink to the topology: %d CPUs, %v", n, err)
	}
}

// ProbeTopoFile reads at most max bytes: a file that fits is parsed
// whole; of a larger one the start is parsed, elements still open where
// it ends (or a tag cut by it) are no error, and the rest, whatever it
// holds, is never looked at.
func TestProbeTopoFile(t *testing.T) {
	const max = 1024
	pad := func(start string, n int, after string) string {
		var b strings.Builder
		b.WriteString(start)
		for b.Len() < n {
			b.WriteString(`<cpu numaid="0" vendor="é"/>`)
		}
		return b.String() + after
	}
	exact := func(s string, n int) string { return s + strings.Repeat(" ", n-len(s)) }
	r := fixture(t, map[string]string{
		"/exact.xml":   exact(pad("<system>", max-64, ""), max-len("</system>")) + "</system>",
		"/big.xml":     pad("<system>", 3*max, "\x00\x00 not XML <<<"),
		"/cut.xml":     pad("<system>", max+13, "\x00"),
		"/graphs.xml":  pad("<graphs>", 3*max, ""),
		"/broken.xml":  "<system><cpu></system>" + strings.Repeat(" ", 2*max),
		"/notag.xml":   "<system" + strings.Repeat(" ", 2*max) + ">",
		"/empty.xml":   "",
		"/decl.xml":    pad("<?xml version=\"1.0\"?>\n<!-- dumped -->\n<system version=\"1\">", 2*max, ""),
		"/partial.xml": "<system><cpu numaid=\"0\"></cpu></system>",
	})
	for _, c := range []struct {
		file    string
		partial bool
		err     string
	}{
		{"/exact.xml", false, ""},
		{"/partial.xml", false, ""},
		{"/big.xml", true, ""},
		{"/cut.xml", true, ""},
		{"/decl.xml", true, ""},
		{"/graphs.xml", true, "root element <graphs>, want <system>"},
		{"/broken.xml", true, "line 1: XML syntax error on line 1: element <cpu> closed by </system>"},
		{"/notag.xml", true, "no XML tag in its first 1 KiB"},
		{"/empty.xml", false, "no XML element in it"},
	} {
		h, err := ProbeTopoFile(r, c.file, max)
		if h.Checked > max || h.Partial() != c.partial || fmt.Sprint(err) != c.err && !(c.err == "" && err == nil) {
			t.Errorf("%s: %+v (partial %v), %v; want partial %v, error %q", c.file, h, h.Partial(), err, c.partial, c.err)
		}
		if err != nil && !errors.Is(err, ErrNotTopology) {
			t.Errorf("%s: %v does not wrap ErrNotTopology", c.file, err)
		}
	}
	if _, err := ProbeTopoFile(r, "/missing.xml", max); !errors.Is(err, os.ErrNotExist) || err.Error() != "no such file or directory" {
		t.Errorf("a missing file: %v", err)
	}
}

// A FIFO where a port's state should be (a container's mounts make sysfs
// what they like) does not block the check: the state is unknown.
func TestCheckHCAStateFIFO(t *testing.T) {
	files := map[string]string{}
	hca(files, "mlx5_0", "0000:18:00.0", 0, false)
	files["/sys/devices/pci0000:00/0000:18:00.0/infiniband/mlx5_0/ports/1/rate"] = "400 Gb/sec\n"
	r := fixture(t, files)
	if err := unix.Mkfifo(r.Path("/sys/devices/pci0000:00/0000:18:00.0/infiniband/mlx5_0/ports/1/state"), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []string
	within(t, "Check with a FIFO as the port state", func() {
		got = only(Check(r, envMap(map[string]string{"NCCL_IB_HCA": "=mlx5_0:1"}), unix.RLIM_INFINITY), "nccl_hca")
	})
	wantMsgs(t, got, nil)
}
