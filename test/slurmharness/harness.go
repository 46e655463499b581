package slurmharness

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Tristate is an option that is decided by the harness unless a test says.
type Tristate int

const (
	Auto Tristate = iota // the harness decides
	On
	Off
)

// Options shape one cluster. The zero value is a plain node as `slurmd -C`
// sees it, no GRES, task/affinity, PrologFlags=Alloc,Contain.
type Options struct {
	// NodeLine replaces the detected node line entirely, e.g. the output of
	// `gpuprep-gres --format slurm`. NodeName is forced to the short host
	// name, NodeAddr=127.0.0.1 and State=UNKNOWN are added when absent. The
	// fields below are still applied on top of it.
	NodeLine string
	// Single node-line fields; 0 keeps the detected (or NodeLine's) value.
	// CPUs is recomputed as Sockets*CoresPerSocket*ThreadsPerCore when one of
	// those changes and CPUs is not given.
	Sockets, CoresPerSocket, ThreadsPerCore, CPUs, RealMemory int
	// Gres is the node's Gres= value, e.g. "gpu:4" or "gpu:h100:8".
	Gres string
	// NodeFields are more "Key=Value" fields for the node line (Features=...,
	// Weight=...); a key already there is replaced.
	NodeFields []string
	// ConfigOverrides adds SlurmdParameters=config_overrides. Auto: when the
	// node line claims other hardware than `slurmd -C` reports.
	ConfigOverrides Tristate
	// SlurmdParameters are more SlurmdParameters values
	// (numa_node_as_socket, ...), merged with config_overrides.
	SlurmdParameters []string

	// GresConf is the text of gres.conf (written beside slurm.conf; empty
	// file when "").
	GresConf string
	// CgroupConf, when set, is written as cgroup.conf beside slurm.conf (for
	// ProctrackType=proctrack/cgroup or TaskPlugin=task/cgroup in ExtraConf;
	// both work on the v1-hybrid development machines with
	// CgroupPlugin=cgroup/v1). Job cgroups are /slurm_<node>/uid_N/job_N on
	// the host, shared by every cluster here, so the harness then sets
	// FirstJobId from the cluster's port to keep concurrent clusters' job ids
	// apart (ExtraConf "FirstJobId=..." overrides).
	CgroupConf string

	// Files are written into the cluster folder before the daemons start
	// (name relative to it => content; mode 0755 when the content starts with
	// "#!"), e.g. hook scripts.
	Files map[string]string

	// Prolog and Epilog are the hook paths; a relative path is inside the
	// cluster folder (see Files). slurmd runs them as root with no PATH and
	// no HOME; PrologEnv/EpilogEnv ("K=V") are set through a wrapper script
	// the harness writes (prolog-wrapper.sh) that execs the hook.
	Prolog, Epilog       string
	PrologEnv, EpilogEnv []string
	// PrologFlags, default "Alloc,Contain" (Contain works with
	// proctrack/linuxproc here: the extern step runs; slurmctld logs a
	// harmless "If using PrologFlags=Contain for pam_slurm_adopt..." error).
	// "none" leaves PrologFlags out.
	PrologFlags string
	// TaskPlugin, default "task/affinity"; "task/none" for no binding.
	TaskPlugin string

	// HealthCheckProgram is slurm.conf's HealthCheckProgram (a relative
	// path is inside the cluster folder, see Files), run by slurmd at its
	// start and every HealthCheckInterval seconds (default 2) on a node in
	// any state (HealthCheckNodeState=ANY).
	HealthCheckProgram  string
	HealthCheckInterval int

	// ExtraConf are more slurm.conf lines. A "Key=Value" line whose key is
	// already in the generated file replaces that line (keys compare without
	// case); other lines (a second PartitionName=, comments) are appended.
	ExtraConf []string

	// StartTimeout bounds the wait for the node to be ready (default 30 s).
	StartTimeout time.Duration
	// ReadyStates are the sinfo %T states that count as started (default
	// "idle"). A scenario that expects a bad registration can add e.g.
	// "inval" or "drained".
	ReadyStates []string
}

// Cluster is one running one-node Slurm.
type Cluster struct {
	t testing.TB

	Dir         string // the cluster's folder
	Conf        string // slurm.conf path
	GresConfig  string // gres.conf path
	Node        string // node name (short host name)
	Partition   string // default partition
	CtldPort    int
	SlurmdPort  int
	MungeSocket string

	// Detected is the node line `slurmd -C` printed (first line).
	Detected string
	// NodeLine is the node line written to slurm.conf.
	NodeLine string
	// StartTime is how long Start took (folder, slurmd -C, munged,
	// slurmctld, slurmd, node ready); StopTime how long Stop took.
	StartTime, StopTime time.Duration

	mu       sync.Mutex
	daemons  []*daemon // in start order: munged, slurmctld, slurmd
	watchdog *daemon
	stopped  bool
	jobSeq   int
	baseEnv  []string
	keepDirs bool
}

type daemon struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func (d *daemon) pid() int { return d.cmd.Process.Pid }

func (d *daemon) alive() bool {
	select {
	case <-d.done:
		return false
	default:
		return true
	}
}

// Start builds and starts a cluster and registers its teardown with
// t.Cleanup. It fails the test (or skips it, see Require) when Slurm cannot
// run; the error names the step and carries the daemons' log tails.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	Require(t)
	sweepStale(t)

	begin := time.Now()
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 30 * time.Second
	}
	if len(opts.ReadyStates) == 0 {
		opts.ReadyStates = []string{"idle"}
	}
	// Short path: the munge socket path must fit a sockaddr_un (108 bytes),
	// which t.TempDir's test-named folders can exceed.
	dir, err := os.MkdirTemp("", "slurmh-")
	if err != nil {
		t.Fatalf("slurmharness: %v", err)
	}
	c := &Cluster{
		t:           t,
		Dir:         dir,
		Conf:        filepath.Join(dir, "slurm.conf"),
		GresConfig:  filepath.Join(dir, "gres.conf"),
		Partition:   "debug",
		MungeSocket: filepath.Join(dir, "munge", "munge.sock"),
		keepDirs:    os.Getenv("SLURMHARNESS_KEEP") != "",
	}
	t.Cleanup(c.cleanup)
	c.baseEnv = cleanEnv(os.Environ(), c.Conf)

	// Every folder on the way to the munge socket must be world-executable
	// (and the configs readable) for jobs running as other users.
	for _, sub := range []string{"", "munge", "state", "spool", "log", "jobs"} {
		p := filepath.Join(dir, sub)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatalf("slurmharness: %v", err)
		}
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatalf("slurmharness: %v", err)
		}
	}
	if err := writeOwner(dir); err != nil {
		t.Fatalf("slurmharness: %v", err)
	}
	if err := c.startWatchdog(); err != nil {
		t.Fatalf("slurmharness: %v", err)
	}

	host, err := shortHostname()
	if err != nil {
		t.Fatalf("slurmharness: %v", err)
	}
	c.Node = host
	detected, err := detectNode(c.baseEnv)
	if err != nil {
		t.Fatalf("slurmharness: %v", err)
	}
	c.Detected = detected
	nodeLine, overrides, err := buildNodeLine(host, detected, opts)
	if err != nil {
		t.Fatalf("slurmharness: %v", err)
	}
	c.NodeLine = nodeLine
	switch opts.ConfigOverrides {
	case On:
		overrides = true
	case Off:
		overrides = false
	}
	for name, content := range opts.Files {
		mode := os.FileMode(0o644)
		if strings.HasPrefix(content, "#!") {
			mode = 0o755
		}
		c.write(name, content, mode)
	}
	for _, p := range []*string{&opts.Prolog, &opts.Epilog, &opts.HealthCheckProgram} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	if err := c.writeHooks(&opts); err != nil {
		t.Fatalf("slurmharness: %v", err)
	}
	if err := os.WriteFile(c.GresConfig, []byte(opts.GresConf), 0o644); err != nil {
		t.Fatalf("slurmharness: %v", err)
	}
	for _, p := range missingGresFiles(opts.GresConf) {
		t.Logf("slurmharness: gres.conf names %s, which does not exist: slurmd waits about 19 s for it, then dies", p)
	}

	if opts.CgroupConf != "" {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.conf"), []byte(opts.CgroupConf), 0o644); err != nil {
			t.Fatalf("slurmharness: %v", err)
		}
	}

	if err := c.startMunge(); err != nil {
		t.Fatalf("slurmharness: %v", err)
	}

	var lastErr error
	for attempt := 1; attempt <= 3; attempt++ {
		ports, err := freePorts(2)
		if err != nil {
			t.Fatalf("slurmharness: %v", err)
		}
		c.CtldPort, c.SlurmdPort = ports[0], ports[1]
		conf := c.slurmConf(nodeLine, overrides, opts)
		if err := os.WriteFile(c.Conf, []byte(conf), 0o644); err != nil {
			t.Fatalf("slurmharness: %v", err)
		}
		lastErr = c.startSlurm(opts)
		if lastErr == nil {
			c.StartTime = time.Since(begin)
			t.Logf("slurmharness: node %s %s in %v (dir %s, ports %d/%d)", c.Node, strings.Join(opts.ReadyStates, "|"), c.StartTime.Round(time.Millisecond), c.Dir, c.CtldPort, c.SlurmdPort)
			return c
		}
		inUse := strings.Contains(c.SlurmctldLog()+c.SlurmdLog()+c.readLog("slurmctld.out")+c.readLog("slurmd.out"), "Address already in use")
		c.stopSlurm()
		if !inUse {
			break
		}
		t.Logf("slurmharness: port collision, retrying: %v", lastErr)
		for _, f := range []string{"slurmctld.log", "slurmd.log", "slurmctld.out", "slurmd.out"} {
			os.Remove(filepath.Join(c.Dir, "log", f))
		}
	}
	t.Fatalf("slurmharness: %v", lastErr)
	return nil
}

// PIDs are the daemons' process ids by name (munged, slurmctld, slurmd; the
// last started instance of each).
func (c *Cluster) PIDs() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := map[string]int{}
	for _, d := range c.daemons {
		m[d.name] = d.pid()
	}
	return m
}

// shortHostname is `hostname -s`.
func shortHostname() (string, error) {
	h, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("hostname: %w", err)
	}
	h, _, _ = strings.Cut(h, ".")
	if h == "" {
		return "", errors.New("empty host name")
	}
	return h, nil
}

// detectNode returns the first line of `slurmd -C`.
func detectNode(env []string) (string, error) {
	slurmd, err := lookPath("slurmd")
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, slurmd, "-C")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("slurmd -C: %v: %s", err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "NodeName=") {
			return strings.TrimSpace(l), nil
		}
	}
	return "", fmt.Errorf("slurmd -C printed no NodeName= line: %q", out)
}

// field is one Key=Value of a node line.
type field struct{ k, v string }

func parseFields(line string) []field {
	var fs []field
	for _, tok := range strings.Fields(line) {
		k, v, _ := strings.Cut(tok, "=")
		fs = append(fs, field{k, v})
	}
	return fs
}

func getField(fs []field, k string) (string, bool) {
	for _, f := range fs {
		if strings.EqualFold(f.k, k) {
			return f.v, true
		}
	}
	return "", false
}

func setField(fs []field, k, v string) []field {
	for i, f := range fs {
		if strings.EqualFold(f.k, k) {
			fs[i].v = v
			return fs
		}
	}
	return append(fs, field{k, v})
}

func delField(fs []field, k string) []field {
	return slices.DeleteFunc(fs, func(f field) bool { return strings.EqualFold(f.k, k) })
}

// shape is what the node line claims.
type shape struct{ cpus, sockets, cores, threads, mem int }

func shapeOf(fs []field) shape {
	num := func(k string, def int) int {
		if v, ok := getField(fs, k); ok {
			if n, err := strconv.Atoi(v); err == nil {
				return n
			}
		}
		return def
	}
	s := shape{
		cores:   num("CoresPerSocket", 1),
		threads: num("ThreadsPerCore", 1),
		mem:     num("RealMemory", 1),
	}
	if v, ok := getField(fs, "Sockets"); ok {
		s.sockets, _ = strconv.Atoi(v)
	} else {
		s.sockets = num("Boards", 1) * num("SocketsPerBoard", 1)
	}
	s.cpus = num("CPUs", s.sockets*s.cores*s.threads)
	return s
}

// buildNodeLine returns the slurm.conf node line and whether it claims other
// hardware than detected (config_overrides needed).
func buildNodeLine(host, detected string, o Options) (string, bool, error) {
	det := parseFields(detected)
	base := det
	if o.NodeLine != "" {
		line := strings.TrimSpace(o.NodeLine)
		if !strings.HasPrefix(strings.ToLower(line), "nodename=") {
			return "", false, fmt.Errorf("NodeLine must start with NodeName=: %q", o.NodeLine)
		}
		base = parseFields(line)
	}
	fs := slices.Clone(base)
	// One spelling of the socket count: Sockets=.
	if _, ok := getField(fs, "Sockets"); !ok {
		if _, ok := getField(fs, "SocketsPerBoard"); ok {
			sh := shapeOf(fs)
			fs = delField(fs, "Boards")
			fs = delField(fs, "SocketsPerBoard")
			fs = insertAfter(fs, "CPUs", field{"Sockets", strconv.Itoa(sh.sockets)})
		}
	}
	fs = setField(fs, "NodeName", host)
	fs = setField(fs, "NodeAddr", "127.0.0.1")
	fs = moveTo(fs, "NodeAddr", 1)
	topoChanged := false
	for _, kv := range []struct {
		k string
		v int
	}{{"Sockets", o.Sockets}, {"CoresPerSocket", o.CoresPerSocket}, {"ThreadsPerCore", o.ThreadsPerCore}} {
		if kv.v > 0 {
			fs = setField(fs, kv.k, strconv.Itoa(kv.v))
			topoChanged = true
		}
	}
	if o.CPUs > 0 {
		fs = setField(fs, "CPUs", strconv.Itoa(o.CPUs))
	} else if topoChanged {
		sh := shapeOf(delField(slices.Clone(fs), "CPUs"))
		fs = setField(fs, "CPUs", strconv.Itoa(sh.cpus))
	}
	if o.RealMemory > 0 {
		fs = setField(fs, "RealMemory", strconv.Itoa(o.RealMemory))
	}
	if o.Gres != "" {
		fs = setField(fs, "Gres", o.Gres)
	}
	for _, nf := range o.NodeFields {
		k, v, ok := strings.Cut(nf, "=")
		if !ok || k == "" {
			return "", false, fmt.Errorf("NodeFields entry %q is not Key=Value", nf)
		}
		fs = setField(fs, k, v)
	}
	if _, ok := getField(fs, "State"); !ok {
		fs = append(fs, field{"State", "UNKNOWN"})
	}
	var b strings.Builder
	for i, f := range fs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(f.k + "=" + f.v)
	}
	want, have := shapeOf(fs), shapeOf(det)
	differs := want.cpus != have.cpus || want.sockets != have.sockets || want.cores != have.cores ||
		want.threads != have.threads || want.mem > have.mem
	return b.String(), differs, nil
}

func insertAfter(fs []field, after string, f field) []field {
	for i, g := range fs {
		if strings.EqualFold(g.k, after) {
			return slices.Insert(fs, i+1, f)
		}
	}
	return append(fs, f)
}

func moveTo(fs []field, k string, pos int) []field {
	for i, f := range fs {
		if strings.EqualFold(f.k, k) {
			fs = slices.Delete(fs, i, i+1)
			return slices.Insert(fs, min(pos, len(fs)), f)
		}
	}
	return fs
}

var envKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// writeHooks writes env wrappers for Prolog/Epilog when env is given.
func (c *Cluster) writeHooks(o *Options) error {
	wrap := func(kind, path string, env []string) (string, error) {
		if path == "" || len(env) == 0 {
			return path, nil
		}
		var b strings.Builder
		b.WriteString("#!/bin/sh\n# written by slurmharness: the environment for " + kind + "\n")
		for _, kv := range env {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || !envKey.MatchString(k) {
				return "", fmt.Errorf("%sEnv entry %q is not NAME=value", kind, kv)
			}
			fmt.Fprintf(&b, "%s=%s; export %s\n", k, shellQuote(v), k)
		}
		fmt.Fprintf(&b, "exec %s \"$@\"\n", shellQuote(path))
		p := filepath.Join(c.Dir, strings.ToLower(kind)+"-wrapper.sh")
		return p, os.WriteFile(p, []byte(b.String()), 0o755)
	}
	var err error
	if o.Prolog, err = wrap("Prolog", o.Prolog, o.PrologEnv); err != nil {
		return err
	}
	o.Epilog, err = wrap("Epilog", o.Epilog, o.EpilogEnv)
	return err
}

// slurmConf renders slurm.conf.
func (c *Cluster) slurmConf(nodeLine string, overrides bool, o Options) string {
	taskPlugin := o.TaskPlugin
	if taskPlugin == "" {
		taskPlugin = "task/affinity"
	}
	prologFlags := o.PrologFlags
	if prologFlags == "" {
		prologFlags = "Alloc,Contain"
	}
	var sdParams []string
	if overrides {
		sdParams = append(sdParams, "config_overrides")
	}
	sdParams = append(sdParams, o.SlurmdParameters...)

	kv := []field{
		{"ClusterName", "gpuprep"},
		{"SlurmctldHost", c.Node + "(127.0.0.1)"},
		{"SlurmctldPort", strconv.Itoa(c.CtldPort)},
		{"SlurmdPort", strconv.Itoa(c.SlurmdPort)},
		{"AuthType", "auth/munge"},
		{"AuthInfo", "socket=" + c.MungeSocket},
		{"CredType", "cred/munge"},
		{"SlurmUser", "root"},
		{"SlurmdUser", "root"},
		{"StateSaveLocation", filepath.Join(c.Dir, "state")},
		{"SlurmdSpoolDir", filepath.Join(c.Dir, "spool")},
		{"SlurmctldPidFile", filepath.Join(c.Dir, "state", "slurmctld.pid")},
		{"SlurmdPidFile", filepath.Join(c.Dir, "spool", "slurmd.pid")},
		{"SlurmctldLogFile", filepath.Join(c.Dir, "log", "slurmctld.log")},
		{"SlurmdLogFile", filepath.Join(c.Dir, "log", "slurmd.log")},
		{"SlurmctldDebug", "info"},
		{"SlurmdDebug", "info"},
		{"ProctrackType", "proctrack/linuxproc"},
		{"TaskPlugin", taskPlugin},
		{"SelectType", "select/cons_tres"},
		// CR_Core, not the memory-consuming default: a job without --mem
		// would otherwise take the node's whole memory and serialise jobs.
		{"SelectTypeParameters", "CR_Core"},
		{"SchedulerParameters", "batch_sched_delay=0"},
		{"ReturnToService", "2"},
		{"MailProg", "/bin/true"},
		{"MpiDefault", "none"},
		{"GresTypes", "gpu"},
		{"AccountingStorageType", "accounting_storage/none"},
		{"JobAcctGatherType", "jobacct_gather/none"},
		{"JobCompType", "jobcomp/none"},
		{"SlurmctldTimeout", "30"},
		{"SlurmdTimeout", "30"},
		{"InactiveLimit", "0"},
		{"KillWait", "2"},
		{"MinJobAge", "300"},
		{"Waittime", "0"},
	}
	if prologFlags != "none" {
		kv = append(kv, field{"PrologFlags", prologFlags})
	}
	if len(sdParams) > 0 {
		kv = append(kv, field{"SlurmdParameters", strings.Join(sdParams, ",")})
	}
	if o.CgroupConf != "" {
		// cgroup plugins name cgroups /slurm_<node>/uid_<uid>/job_<id>: give
		// concurrent clusters on this host (same node name) disjoint job ids.
		kv = append(kv, field{"FirstJobId", strconv.Itoa(1 + c.CtldPort%60000*1000)})
	}
	if o.Prolog != "" {
		kv = append(kv, field{"Prolog", o.Prolog})
	}
	if o.Epilog != "" {
		kv = append(kv, field{"Epilog", o.Epilog})
	}
	if o.HealthCheckProgram != "" {
		every := o.HealthCheckInterval
		if every <= 0 {
			every = 2
		}
		kv = append(kv, field{"HealthCheckProgram", o.HealthCheckProgram}, field{"HealthCheckInterval", strconv.Itoa(every)},
			field{"HealthCheckNodeState", "ANY"})
	}
	var extra []string
	for _, l := range o.ExtraConf {
		l = strings.TrimSpace(l)
		k, v, ok := strings.Cut(l, "=")
		simple := ok && !strings.ContainsAny(k, " \t#") && !strings.EqualFold(k, "NodeName") &&
			!strings.EqualFold(k, "PartitionName") && !strings.EqualFold(k, "NodeSet") && !strings.EqualFold(k, "DownNodes")
		if simple {
			if strings.EqualFold(k, "SlurmdParameters") && len(sdParams) > 0 {
				v = strings.Join(append(sdParams, v), ",")
			}
			replaced := false
			for i := range kv {
				if strings.EqualFold(kv[i].k, k) {
					kv[i].v, replaced = v, true
				}
			}
			if replaced {
				continue
			}
			kv = append(kv, field{k, v})
			continue
		}
		extra = append(extra, l)
	}
	var b strings.Builder
	b.WriteString("# written by gpuprep's slurmharness\n")
	for _, f := range kv {
		fmt.Fprintf(&b, "%s=%s\n", f.k, f.v)
	}
	for _, l := range extra {
		b.WriteString(l + "\n")
	}
	b.WriteString(nodeLine + "\n")
	fmt.Fprintf(&b, "PartitionName=%s Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n", c.Partition)
	return b.String()
}

// freePorts picks n distinct free TCP ports on loopback. Slurm binds them a
// moment later; Start retries on "Address already in use".
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// spawn starts a daemon in its own session with stdout/stderr in log/NAME.out.
func (c *Cluster) spawn(name string, args ...string) (*daemon, error) {
	bin, err := lookPath(name)
	if err != nil {
		return nil, err
	}
	out, err := os.OpenFile(filepath.Join(c.Dir, "log", name+".out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	cmd := exec.Command(bin, args...)
	cmd.Env = c.baseEnv
	cmd.Dir = c.Dir
	cmd.Stdout, cmd.Stderr = out, out
	// Own session (setsid). If the test binary dies without running its
	// cleanups (go test -timeout), the watchdog kills the daemons. (No
	// Pdeathsig: it fires when the forking OS thread exits, which a
	// LockOSThread elsewhere in a test could cause mid-test.)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	d := &daemon{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		d.err = cmd.Wait()
		close(d.done)
	}()
	c.mu.Lock()
	c.daemons = append(c.daemons, d)
	c.mu.Unlock()
	if err := appendPID(c.Dir, name, d.pid()); err != nil {
		return d, err
	}
	return d, nil
}

func (c *Cluster) startMunge() error {
	key := make([]byte, 1024)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	md := filepath.Join(c.Dir, "munge")
	if err := os.WriteFile(filepath.Join(md, "munge.key"), key, 0o600); err != nil {
		return err
	}
	d, err := c.spawn("munged", "-F",
		"--key-file="+filepath.Join(md, "munge.key"),
		"--socket="+c.MungeSocket,
		"--pid-file="+filepath.Join(md, "munged.pid"),
		"--log-file="+filepath.Join(c.Dir, "log", "munged.log"),
		"--seed-file="+filepath.Join(md, "munged.seed"),
		"--num-threads=4",
	)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(c.MungeSocket); err == nil {
			return nil
		}
		if !d.alive() {
			return fmt.Errorf("munged exited (%v):\n%s", d.err, tail(c.readLog("munged.out"), 20))
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("munged did not create %s in 10 s:\n%s", c.MungeSocket, tail(c.readLog("munged.out"), 20))
}

// startSlurm starts slurmctld and slurmd and waits for the node.
func (c *Cluster) startSlurm(o Options) error {
	ctld, err := c.spawn("slurmctld", "-D", "-c", "-f", c.Conf)
	if err != nil {
		return err
	}
	sd, err := c.spawn("slurmd", "-D", "-f", c.Conf)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(o.StartTimeout)
	var last string
	for {
		for _, d := range []*daemon{ctld, sd} {
			if !d.alive() {
				return fmt.Errorf("%s exited during start (%v)\n%s", d.name, d.err, c.logTails(30))
			}
		}
		st, reason, err := c.nodeState(2 * time.Second)
		if err == nil {
			last = st + " (" + reason + ")"
			if slices.Contains(o.ReadyStates, st) {
				return nil
			}
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s not %s after %v; last sinfo: %s\n%s", c.Node, strings.Join(o.ReadyStates, "|"), o.StartTimeout, last, c.logTails(30))
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func (c *Cluster) readLog(name string) string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, "log", name))
	return string(b)
}

// SlurmdLog is the whole slurmd.log.
func (c *Cluster) SlurmdLog() string { return c.readLog("slurmd.log") }

// SlurmctldLog is the whole slurmctld.log.
func (c *Cluster) SlurmctldLog() string { return c.readLog("slurmctld.log") }

// LogTails is the last n lines of slurmctld.log and slurmd.log (and the
// daemons' stderr when the log files are empty), for error messages.
func (c *Cluster) LogTails(n int) string { return c.logTails(n) }

func (c *Cluster) logTails(n int) string {
	var b strings.Builder
	for _, pair := range [][2]string{{"slurmctld.log", "slurmctld.out"}, {"slurmd.log", "slurmd.out"}} {
		s := c.readLog(pair[0])
		name := pair[0]
		if strings.TrimSpace(s) == "" {
			s, name = c.readLog(pair[1]), pair[1]
		}
		fmt.Fprintf(&b, "--- %s (last %d lines) ---\n%s\n", name, n, tail(s, n))
	}
	return b.String()
}

// Stop cancels all jobs, stops slurmd, slurmctld and munged by PID (SIGTERM,
// then SIGKILL after a grace period) and kills any process left that carries
// this cluster's SLURM_CONF (steps, tasks, hooks). It is idempotent and runs
// by itself at cleanup; call it to measure or to test a stopped cluster.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return nil
	}
	c.stopped = true
	c.mu.Unlock()
	t0 := time.Now()
	c.cancelAll()
	err := c.stopSlurm()
	if e := c.stopDaemon("munged", 3*time.Second); e != nil && err == nil {
		err = e
	}
	if w := c.watchdog; w != nil && w.alive() {
		syscall.Kill(w.pid(), syscall.SIGKILL)
		<-w.done
	}
	if n := killLeftovers(c.Conf, c.Dir); n > 0 {
		c.t.Logf("slurmharness: killed %d leftover process(es) of %s", n, c.Dir)
	}
	c.StopTime = time.Since(t0)
	os.Remove(filepath.Join(c.Dir, ownerFile))
	return err
}

// watchdogScript waits for the test process to end and then SIGKILLs every
// process of the cluster: environment SLURM_CONF=$2 (steps, tasks, hooks,
// slurmscriptd) or command line naming $3/ (daemons). Normally Stop has done
// all this and killed the watchdog first; it matters when the test binary
// dies without cleanups (go test -timeout panics, SIGKILL).
const watchdogScript = `owner=$1 conf=$2 dir=$3
while kill -0 "$owner" 2>/dev/null; do sleep 1; done
for f in $(grep -lzxF "SLURM_CONF=$conf" /proc/[0-9]*/environ 2>/dev/null) $(grep -lzF "$dir/" /proc/[0-9]*/cmdline 2>/dev/null); do
	pid=${f#/proc/}
	pid=${pid%%/*}
	[ "$pid" = "$$" ] || kill -9 "$pid" 2>/dev/null
done
rm -f "$dir/owner"
`

func (c *Cluster) startWatchdog() error {
	cmd := exec.Command("/bin/sh", "-c", watchdogScript, "slurmharness-watchdog", strconv.Itoa(os.Getpid()), c.Conf, c.Dir)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting watchdog: %w", err)
	}
	d := &daemon{name: "watchdog", cmd: cmd, done: make(chan struct{})}
	go func() {
		d.err = cmd.Wait()
		close(d.done)
	}()
	c.watchdog = d
	return nil
}

// cancelAll cancels every job and waits briefly for them to leave the queue.
func (c *Cluster) cancelAll() {
	d := c.daemon("slurmctld")
	if d == nil || !d.alive() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, _, err := c.Run(ctx, "squeue", "-h", "-o", "%A")
	if err != nil || strings.TrimSpace(out) == "" {
		return
	}
	ids := strings.Fields(out)
	c.Run(ctx, "scancel", ids...)
	for ctx.Err() == nil {
		out, _, err := c.Run(ctx, "squeue", "-h", "-o", "%A")
		if err != nil || strings.TrimSpace(out) == "" {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *Cluster) daemon(name string) *daemon {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.daemons) - 1; i >= 0; i-- {
		if c.daemons[i].name == name {
			return c.daemons[i]
		}
	}
	return nil
}

// stopSlurm stops slurmd, then slurmctld.
func (c *Cluster) stopSlurm() error {
	err := c.stopDaemon("slurmd", 5*time.Second)
	if e := c.stopDaemon("slurmctld", 5*time.Second); e != nil && err == nil {
		err = e
	}
	return err
}

// stopDaemon sends SIGTERM to every started instance of name, waits up to
// grace, then SIGKILLs its process group (slurmctld's slurmscriptd is in it).
func (c *Cluster) stopDaemon(name string, grace time.Duration) error {
	c.mu.Lock()
	var ds []*daemon
	for _, d := range c.daemons {
		if d.name == name {
			ds = append(ds, d)
		}
	}
	c.mu.Unlock()
	var err error
	for _, d := range ds {
		if d.alive() {
			syscall.Kill(d.pid(), syscall.SIGTERM)
			select {
			case <-d.done:
			case <-time.After(grace):
				err = fmt.Errorf("%s (pid %d) ignored SIGTERM for %v; killed", name, d.pid(), grace)
				syscall.Kill(-d.pid(), syscall.SIGKILL)
				syscall.Kill(d.pid(), syscall.SIGKILL)
				<-d.done
			}
		}
		// Anything left in its process group (it is the session leader).
		syscall.Kill(-d.pid(), syscall.SIGKILL)
	}
	return err
}

func (c *Cluster) cleanup() {
	if err := c.Stop(); err != nil {
		c.t.Logf("slurmharness: stop: %v", err)
	}
	if c.t.Failed() || c.keepDirs {
		c.t.Logf("slurmharness: kept %s (logs in %s/log)", c.Dir, c.Dir)
		return
	}
	os.RemoveAll(c.Dir)
}

// missingGresFiles lists File=/MultipleFiles= paths of a gres.conf text that
// do not exist (bracketed ranges are not expanded and not checked).
func missingGresFiles(text string) []string {
	var out []string
	for _, tok := range strings.Fields(text) {
		k, v, ok := strings.Cut(tok, "=")
		if !ok || (!strings.EqualFold(k, "File") && !strings.EqualFold(k, "MultipleFiles")) {
			continue
		}
		for _, p := range strings.Split(v, ",") {
			if p == "" || strings.ContainsAny(p, "[]") {
				continue
			}
			if _, err := os.Stat(p); err != nil {
				out = append(out, p)
			}
		}
	}
	return out
}
