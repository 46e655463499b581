// Package slurmcores is a test oracle for the core numbering of gres.conf
// Cores=: it numbers the cores of a node (or of a fixture root, through
// HWLOC_FSROOT) the way Slurm 22.05.8's slurmd does, independently of
// gpuprep's own node model.
//
// It mirrors src/slurmd/common/xcpuinfo.c of slurm-22-05-8-1
// (xcpuinfo_hwloc_topo_load, xcpuinfo_hwloc_topo_get): hwloc loads the whole
// system (HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED) without L1, L2, L4 and L5
// caches and Misc objects (L3 is kept); packages are walked by logical
// index, skipping those without cores, and below each its cores in logical
// order; a core's abstract id is the running count of cores over that walk,
// and abstract CPU id = core*ThreadsPerCore + thread. The walk is done by a
// small C program on libhwloc, csrc/slurmcores.c (in a subfolder, as go
// build refuses C files in a package without cgo), embedded and compiled on
// first use: it needs cc and Debian's libhwloc-dev. SlurmdC reads Slurm's
// own counts (`slurmd -C`) to validate the oracle against. With
// GPUPREP_ORACLE_ROOT set, cc, libhwloc and slurmd are that Debian root's
// (internal/oracleroot, test/matrix/oracles.sh).
//
// On a real node, hwloc prints the same core numbering (Core L#) with
// Slurm's filters:
//
//	lstopo-no-graphics -l --disallowed --no-icaches --no-io \
//	    --filter l1cache:none --filter l2cache:none \
//	    --filter l4cache:none --filter l5cache:none --filter misc:none
//
// (add `--only core -c` for one line per core with its cpuset).
package slurmcores

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"gpuprep/internal/oracleroot"
	"gpuprep/lib/cpuset"
)

//go:embed csrc/slurmcores.c
var source []byte

// timeout bounds each run of the oracle or of slurmd.
const timeout = 30 * time.Second

// Topology is the oracle's reading of a node.
type Topology struct {
	CPUs           int
	Boards         int
	Sockets        int // in all, counting only packages with cores
	CoresPerSocket int
	ThreadsPerCore int
	// Cores in abstract order: Cores[i].ID == i.
	Cores []Core
}

// Counts are the node's counts as `slurmd -C` prints them.
type Counts struct {
	CPUs           int
	Boards         int
	Sockets        int // SocketsPerBoard * Boards
	CoresPerSocket int
	ThreadsPerCore int
}

func (c Counts) String() string {
	return fmt.Sprintf("CPUs=%d Boards=%d Sockets=%d CoresPerSocket=%d ThreadsPerCore=%d",
		c.CPUs, c.Boards, c.Sockets, c.CoresPerSocket, c.ThreadsPerCore)
}

// Core is one core with its abstract (gres.conf Cores=) id.
type Core struct {
	ID     int
	Socket int        // Slurm's socket index: packages with cores, counted
	CPUs   cpuset.Set // OS ids of all the core's PUs (hwloc's Core cpuset)
	// Mapped are the OS CPU ids Slurm's block map gives this core's
	// abstract CPUs: the core's first ThreadsPerCore PUs whose id is below
	// CPUs. It differs from CPUs only on irregular layouts (cores with more
	// threads than ThreadsPerCore, sparse CPU ids).
	Mapped cpuset.Set
}

// Counts returns the oracle's counts, to compare with SlurmdC's. As slurmd
// -C prints SocketsPerBoard = Sockets/Boards (integer division), Sockets is
// rounded the same way.
func (t *Topology) Counts() Counts {
	sockets := t.Sockets
	if t.Boards > 0 {
		sockets = t.Sockets / t.Boards * t.Boards
	}
	return Counts{CPUs: t.CPUs, Boards: t.Boards, Sockets: sockets,
		CoresPerSocket: t.CoresPerSocket, ThreadsPerCore: t.ThreadsPerCore}
}

var build struct {
	once sync.Once
	bin  string
	err  error
}

// Available says why the oracle cannot run here, or nil.
func Available() error {
	_, err := binary()
	return err
}

// binary compiles slurmcores.c once per process, into the system temp
// folder under a name holding the source's hash, so later test binaries
// reuse it.
func binary() (string, error) {
	build.once.Do(func() { build.bin, build.err = compile() })
	return build.bin, build.err
}

func compile() (string, error) {
	cc, err := oracleroot.LookPath("cc")
	if err != nil {
		return "", fmt.Errorf("slurmcores: no C compiler (cc): install gcc: %w", err)
	}
	key, err := buildKey()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(os.TempDir(), "gpuprep-slurmcores")
	bin := filepath.Join(dir, "slurmcores-"+key)
	if fi, err := os.Stat(bin); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("slurmcores: %w", err)
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", fmt.Errorf("slurmcores: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "slurmcores.c"), source, 0o644); err != nil {
		return "", fmt.Errorf("slurmcores: %w", err)
	}
	// cc sees tmp at oracleroot.Work(tmp): itself on this machine, a
	// bind mount in $GPUPREP_ORACLE_ROOT (whose cc and libhwloc build it).
	in := oracleroot.Work(tmp)
	ctx, cancel := context.WithTimeout(context.Background(), 2*timeout)
	defer cancel()
	var env []string // this machine: cc gets this process's environment
	if oracleroot.Root() != "" {
		env = []string{"PATH=/usr/bin:/bin"}
	}
	cmd, err := oracleroot.Command(ctx, oracleroot.Spec{Tool: cc, Dir: tmp, Env: env,
		Args: []string{"-O2", "-Wall", "-o", filepath.Join(in, "slurmcores"), filepath.Join(in, "slurmcores.c"), "-lhwloc"}})
	if err != nil {
		return "", fmt.Errorf("slurmcores: %w", err)
	}
	msg, err := cmd.CombinedOutput()
	if err != nil {
		if bytes.Contains(msg, []byte("hwloc.h")) {
			return "", errors.New("slurmcores: no hwloc.h: install libhwloc-dev")
		}
		return "", fmt.Errorf("slurmcores: cc: %w: %s", err, strings.TrimSpace(string(msg)))
	}
	// Publish atomically: another test binary may be compiling too.
	if err := os.Rename(filepath.Join(tmp, "slurmcores"), bin); err != nil {
		return "", fmt.Errorf("slurmcores: %w", err)
	}
	return bin, nil
}

// buildKey names a build of the oracle: the source's hash, and in a root
// ($GPUPREP_ORACLE_ROOT) its path and its dpkg status file (any package
// change, such as another libhwloc, changes it), so each root has its own
// binary, linked against its own libhwloc.
func buildKey() (string, error) {
	h := sha256.New()
	h.Write(source)
	if root := oracleroot.Root(); root != "" {
		st := filepath.Join(root, "var/lib/dpkg/status")
		fi, err := os.Stat(st)
		if err != nil {
			return "", fmt.Errorf("slurmcores: %s=%s: %w", oracleroot.Var, root, err)
		}
		fmt.Fprintf(h, "\x00%s\x00%d\x00%d", root, fi.Size(), fi.ModTime().UnixNano())
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// env is the environment for hwloc readers of root: the x86 CPUID backend
// would add this machine's CPU to a fixture.
func env(root string) []string {
	return []string{"HWLOC_FSROOT=" + root, "HWLOC_COMPONENTS=-x86", "PATH=/usr/bin:/bin"}
}

// run runs s (on this machine or in $GPUPREP_ORACLE_ROOT) with the
// package's deadline and returns its standard output.
func run(s oracleroot.Spec) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd, err := oracleroot.Command(ctx, s)
	if err != nil {
		return nil, err
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %w: %s", filepath.Base(s.Tool), err, strings.TrimSpace(errb.String()))
	}
	return out.Bytes(), nil
}

// Read numbers the cores of the fixture root ("/" for this node) as Slurm
// does. It fails when hwloc's Linux backend cannot read root's CPU topology,
// where hwloc (and slurmd) would silently describe this machine instead.
func Read(root string) (*Topology, error) {
	t, err := readEnv(env(root))
	if err != nil {
		return nil, fmt.Errorf("slurmcores on %s: %w", root, err)
	}
	return t, nil
}

// readEnv runs the oracle with the environment env (tests pass
// HWLOC_SYNTHETIC).
func readEnv(env []string) (*Topology, error) {
	bin, err := binary()
	if err != nil {
		return nil, err
	}
	// The binary's folder is where it is seen from (oracleroot.Work).
	dir := filepath.Dir(bin)
	out, err := run(oracleroot.Spec{Tool: filepath.Join(oracleroot.Work(dir), filepath.Base(bin)), Env: env, Dir: dir})
	if err != nil {
		return nil, err
	}
	return Parse(out)
}

// Parse reads slurmcores.c's output.
func Parse(data []byte) (*Topology, error) {
	t := &Topology{}
	seenCounts := false
	for n, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			return nil, fmt.Errorf("line %d: empty", n+1)
		}
		var err error
		switch {
		case f[0] == "counts" && !seenCounts && n == 0:
			seenCounts = true
			var c Counts
			c, err = parseCounts(f[1:])
			t.CPUs, t.Boards, t.Sockets = c.CPUs, c.Boards, c.Sockets
			t.CoresPerSocket, t.ThreadsPerCore = c.CoresPerSocket, c.ThreadsPerCore
		case f[0] == "core" && seenCounts:
			var c Core
			c, err = parseCore(f)
			if err == nil && c.ID != len(t.Cores) {
				err = fmt.Errorf("core %d out of order (want %d)", c.ID, len(t.Cores))
			}
			t.Cores = append(t.Cores, c)
		default:
			err = errors.New("unexpected line")
		}
		if err != nil {
			return nil, fmt.Errorf("line %d %q: %w", n+1, line, err)
		}
	}
	if !seenCounts {
		return nil, errors.New("no counts line")
	}
	return t, nil
}

func parseCounts(f []string) (Counts, error) {
	var c Counts
	fields := map[string]*int{"cpus": &c.CPUs, "boards": &c.Boards, "sockets": &c.Sockets,
		"cores_per_socket": &c.CoresPerSocket, "threads_per_core": &c.ThreadsPerCore}
	if err := parseKV(f, "=", fields); err != nil {
		return Counts{}, err
	}
	return c, nil
}

// parseKV reads "key<sep>int" fields; each key of want must appear once.
func parseKV(f []string, sep string, want map[string]*int) error {
	seen := map[string]bool{}
	for _, kv := range f {
		k, v, ok := strings.Cut(kv, sep)
		p := want[k]
		if !ok || p == nil || seen[k] {
			return fmt.Errorf("unexpected field %q", kv)
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("field %q: not a count", kv)
		}
		*p, seen[k] = n, true
	}
	for k := range want {
		if !seen[k] {
			return fmt.Errorf("no %s", k)
		}
	}
	return nil
}

// parseCore reads "core <id> socket <s> pus <list> mapped <list>".
func parseCore(f []string) (Core, error) {
	if len(f) != 8 || f[2] != "socket" || f[4] != "pus" || f[6] != "mapped" {
		return Core{}, errors.New("want: core <id> socket <socket> pus <list> mapped <list>")
	}
	var c Core
	var err error
	if c.ID, err = strconv.Atoi(f[1]); err != nil || c.ID < 0 {
		return Core{}, fmt.Errorf("bad core id %q", f[1])
	}
	if c.Socket, err = strconv.Atoi(f[3]); err != nil || c.Socket < 0 {
		return Core{}, fmt.Errorf("bad socket %q", f[3])
	}
	if c.CPUs, err = parseList(f[5]); err != nil {
		return Core{}, err
	}
	if c.Mapped, err = parseList(f[7]); err != nil {
		return Core{}, err
	}
	return c, nil
}

func parseList(s string) (cpuset.Set, error) {
	if s == "-" {
		return cpuset.Set{}, nil
	}
	return cpuset.Parse(s)
}
