package srunwrapcmd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gpuprep/lib/nccl"
)

// readBytes is this process's rchar (/proc/self/io): every byte its
// read(2) calls returned so far.
func readBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Skipf("no /proc/self/io: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "rchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no rchar in /proc/self/io:\n%s", b)
	return 0
}

// bigTopo writes a topology file of size bytes under root: 1 MiB of a
// valid topology's start (<system> and <cpu> elements, never closed),
// then zeros (a hole), which no XML parser takes. A reader that went past
// the first MiB would find the file does not parse.
func bigTopo(t *testing.T, root string, size int64) string {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("<?xml version=\"1.0\"?>\n<system version=\"1\">\n")
	for i := 0; b.Len() < 1<<20-100; i++ {
		fmt.Fprintf(&b, "  <cpu numaid=\"%d\" affinity=\"ffffffff\" arch=\"x86_64\"/>\n", i%2)
	}
	p := "/etc/nccl/big.xml"
	full := filepath.Join(root, p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(full, size); err != nil {
		t.Fatal(err)
	}
	return p
}

// topoWarnings are the warnings about NCCL_TOPO_FILE (descRoot has no
// sysfs, so NCCL_IB_HCA gets its own).
func topoWarnings(stderr string) []string {
	var out []string
	for _, l := range warnings(stderr) {
		if strings.Contains(l, "NCCL_TOPO_FILE") {
			out = append(out, l)
		}
	}
	return out
}

// A 16 MiB or a 1 GiB (sparse) NCCL_TOPO_FILE costs a rank what a small
// one does: srunwrap reads only its first nccl.TopoProbeMax bytes (so it
// never sees the zeros past the first MiB), checks that they start an
// NCCL topology, says once (local rank 0) that it checked only that much,
// and runs the command. Other ranks read nothing of it. Counted in bytes
// read (rchar), not in time.
func TestBigTopoFileReadsItsStart(t *testing.T) {
	_, all := dgxh100(t)
	root := descRoot(t, "")
	base := withVar(rankEnv(0, 8), "NCCL_TOPO_FILE", "")
	run := func(env []string) (read int64, stderr string, f *fakeOS) {
		f = &fakeOS{allowed: all, job: all}
		before := readBytes(t)
		_, _, stderr = runWrap(t, f, env, "--root", root, "--", "python")
		return readBytes(t) - before, stderr, f
	}
	idle, _, _ := run(base)
	for _, c := range []struct {
		size int64
		want string
	}{
		{16 << 20, "is 16 MiB"},
		{1 << 30, "is 1 GiB"},
	} {
		p := bigTopo(t, root, c.size)
		read, stderr, f := run(withVar(base, "NCCL_TOPO_FILE", p))
		if extra := read - idle; extra > nccl.TopoProbeMax+16<<10 {
			t.Errorf("%s: srunwrap read %d bytes more than without NCCL_TOPO_FILE, want at most %d", c.want, extra, nccl.TopoProbeMax)
		}
		if f.execCalls != 1 {
			t.Errorf("%s: exec calls %d, want the command run", c.want, f.execCalls)
		}
		w := topoWarnings(stderr)
		if len(w) != 1 || !strings.Contains(w[0], "NCCL_TOPO_FILE="+p+" "+c.want) || !strings.Contains(w[0], "checked only its first 64 KiB") {
			t.Errorf("%s: warnings %q, want one saying only the first 64 KiB were checked", c.want, w)
		}
		// Rank 1 says nothing of it.
		f = &fakeOS{allowed: all, job: all}
		_, _, stderr = runWrap(t, f, withVar(rankEnv(1, 8), "NCCL_TOPO_FILE", p), "--root", root, "--", "python")
		if w := topoWarnings(stderr); len(w) != 0 || f.execCalls != 1 {
			t.Errorf("%s: rank 1: exec calls %d, warnings %q", c.want, f.execCalls, w)
		}
	}
}

// A file too large to check whole is a note, not a problem found: where
// the site refuses on nccl_topo_file the command still runs, and where it
// turned the check off nothing is said.
func TestBigTopoFileNeverRefuses(t *testing.T) {
	_, all := dgxh100(t)
	roots := map[string]string{}
	for _, c := range []struct{ action, want string }{{"refuse", "checked only its first 64 KiB"}, {"off", ""}} {
		root := descRoot(t, "[srunwrap.checks]\nnccl_topo_file = \""+c.action+"\"\n")
		roots[c.action] = root
		p := bigTopo(t, root, 16<<20)
		f := &fakeOS{allowed: all, job: all}
		_, _, stderr := runWrap(t, f, withVar(rankEnv(0, 8), "NCCL_TOPO_FILE", p), "--root", root, "--", "python")
		w := topoWarnings(stderr)
		if f.execCalls != 1 || (c.want == "") != (len(w) == 0) || c.want != "" && !strings.Contains(w[0], c.want) {
			t.Errorf("nccl_topo_file = %s: exec calls %d, warnings %q", c.action, f.execCalls, w)
		}
	}
	// A start that is not a topology is still refused.
	root := roots["refuse"]
	p := "/etc/nccl/graphs.xml"
	os.MkdirAll(filepath.Join(root, "etc/nccl"), 0o755)
	if err := os.WriteFile(filepath.Join(root, p), []byte("<graphs>"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &fakeOS{allowed: all, job: all}
	_, _, stderr := runWrap(t, f, withVar(rankEnv(3, 8), "NCCL_TOPO_FILE", p), "--root", root, "--", "python")
	if f.execCalls != 0 || !strings.Contains(stderr, "root element <graphs>") {
		t.Errorf("a file that is no topology, refused: exec calls %d, stderr %q", f.execCalls, stderr)
	}
}
