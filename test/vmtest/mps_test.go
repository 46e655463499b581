package vmtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gpuprep/lib/mps"
	"gpuprep/test/vmnode"
)

// The mps knob's launcher on a real systemd (issue 23): where PID 1 is
// systemd, lib/hook gives the knob mps.Systemd, which runs each control
// daemon as a transient unit gpuprep-mps-<user>-<key>.service over D-Bus.
// The VM has no GPU, so the daemon is the simulated one (internal/mpssim,
// installed as /usr/local/bin/nvidia-cuda-mps-control for the test), and
// test/vmtest/mpsprobe drives lib/mps as the knob's Apply does: `start`
// as the prolog (Dirs, Create, Exec.Start), `stop` as the epilog (Quit,
// Left, Done, Remove). The start runs inside a throwaway unit with
// KillMode=control-group, as the prolog runs in slurmd's: once it exits
// systemd kills whatever is left in its cgroup, so a daemon that lives on
// is one that was never there.

// mpsUser is the VM's user the daemons serve (uid 1000, test/vm);
// mpsDashUser, made by the test, has a dash in their name, which a unit
// name spells \x2d (mps.UnitName).
const (
	mpsUser     = "alice"
	mpsDashUser = "mps-user"
)

// mpsBin and mpsProbe are where the simulated control daemon and the probe
// go in the VM; mpsBase is the knob's base, mps.DefaultBase.
const (
	mpsBin   = "/usr/local/bin/" + mps.ControlName
	mpsProbe = "/usr/local/sbin/gpuprep-test-mpsprobe"
	mpsBase  = mps.DefaultBase
)

// mpsProbeResult is what the probe prints (test/vmtest/mpsprobe).
type mpsProbeResult struct {
	Unit    string       `json:"unit"`
	Pipe    string       `json:"pipe"`
	Dir     string       `json:"dir"`
	PID     int          `json:"pid"`
	Stopped *mps.Stopped `json:"stopped"`
	Left    []int        `json:"left"`
	Self    string       `json:"self_cgroup"`
}

// installMPSProbe builds the simulated nvidia-cuda-mps-control and the
// probe here (static: CGO_ENABLED=0) and copies them into the VM; both
// are removed at the end of the test, with whatever unit (and so
// process) of the test is left.
func installMPSProbe(t *testing.T, ctx context.Context) {
	t.Helper()
	dir := t.TempDir()
	for pkg, out := range map[string]string{"./internal/mpssim/cmd/nvidia-cuda-mps-control": "control", "./test/vmtest/mpsprobe": "probe"} {
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", filepath.Join(dir, out), pkg)
		cmd.Dir = repoDir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, b)
		}
	}
	for local, remote := range map[string]string{"control": mpsBin, "probe": mpsProbe} {
		if err := node.CopyIn(ctx, filepath.Join(dir, local), remote); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// Any unit of the test's daemons left (stopping one kills its
		// cgroup; the VM has no GPU, so no other gpuprep-mps unit), and
		// the programs.
		node.Run(ctx, fmt.Sprintf(`for u in $(systemctl list-units --all --plain --no-legend 'gpuprep-mps-*' | awk '{print $1}'); do systemctl stop "$u"; systemctl reset-failed "$u"; done 2>/dev/null
rm -f %s %s`, mpsBin, mpsProbe))
	})
}

// mpsDaemon is user's daemon on uuid: its paths, and its unit. Its
// directory is removed at the end of the test.
func mpsDaemon(t *testing.T, user, uuid string) (mps.Paths, string) {
	t.Helper()
	key, err := mps.Key([]string{uuid})
	if err != nil {
		t.Fatal(err)
	}
	p, err := mps.Dirs(mpsBase, user, key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		node.Run(ctx, "rm -rf "+vmnode.Quote(p.Dir))
	})
	return p, mps.UnitName(mps.Daemon{UUIDs: []string{uuid}, Paths: p})
}

// runProbe runs the probe's op for user's daemon on uuid (args: more flags) and decodes
// what it prints; the start runs in a transient unit with
// KillMode=control-group that ends with it (systemd-run --wait), as a
// prolog in slurmd's cgroup. It fails the test when the probe fails.
func runProbe(t *testing.T, ctx context.Context, user, op, uuid string, args ...string) (mpsProbeResult, time.Duration) {
	t.Helper()
	cmd := strings.Join(append([]string{mpsProbe, op, "-user", user, "-uuid", uuid, "-bin", mpsBin, "-base", mpsBase}, args...), " ")
	if op == "start" {
		cmd = "systemd-run --quiet --wait --pipe --collect -p KillMode=control-group --unit gpuprep-test-mpsprobe " + cmd
	}
	t0 := time.Now()
	out, stderr, err := node.Run(ctx, cmd)
	took := time.Since(t0)
	if err != nil {
		t.Fatalf("mpsprobe %s: %v\n%s", op, err, stderr)
	}
	t.Logf("mpsprobe %s (%v): %s%s", op, took.Round(time.Millisecond), strings.TrimSpace(out), indent(stderr))
	var r mpsProbeResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("mpsprobe %s printed %q: %v", op, out, err)
	}
	return r, took
}

func indent(s string) string {
	if s = strings.TrimSpace(s); s == "" {
		return ""
	}
	return "\n\t" + strings.ReplaceAll(s, "\n", "\n\t")
}

// unitShow is `systemctl show` of unit for props, as a map.
func unitShow(t *testing.T, ctx context.Context, unit string, props ...string) map[string]string {
	t.Helper()
	out := MustRun(t, ctx, "systemctl show "+vmnode.Quote(unit)+" -p "+strings.Join(props, ","))
	m := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = v
		}
	}
	return m
}

// procsOf are the pids in the unit's cgroup (cgroup.procs), none when the
// cgroup is gone.
func procsOf(t *testing.T, ctx context.Context, cgroup string) []int {
	t.Helper()
	out := MustRun(t, ctx, "cat "+vmnode.Quote("/sys/fs/cgroup"+cgroup+"/cgroup.procs")+" 2>/dev/null || true")
	var pids []int
	for _, f := range strings.Fields(out) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// checkRunning checks the daemon the probe started: its unit is active,
// KillMode=control-group, MainPID the daemon; the daemon and the server
// it started are in the unit's cgroup, not the probe's or slurmd's; the
// pipe directory is root's 0710 with an ACL entry user:<user>:--x (the
// VM's /run, a tmpfs, takes ACLs), the log directory root's 0700; and
// the daemon answers get_server_list with its server.
func checkRunning(t *testing.T, ctx context.Context, r mpsProbeResult, user, uuid string) (cgroup string, server int) {
	t.Helper()
	sh := unitShow(t, ctx, r.Unit, "LoadState", "ActiveState", "SubState", "KillMode", "ControlGroup", "MainPID", "Type", "Environment", "ExecStart")
	t.Logf("systemctl show %s: %v", r.Unit, sh)
	cgroup = sh["ControlGroup"]
	if sh["ActiveState"] != "active" || sh["SubState"] != "running" || sh["KillMode"] != "control-group" || sh["Type"] != "simple" {
		t.Errorf("%s: %v; want active running, KillMode=control-group, Type=simple", r.Unit, sh)
	}
	if want := "/system.slice/" + r.Unit; cgroup != want {
		t.Errorf("%s has ControlGroup %q, want %s", r.Unit, cgroup, want)
	}
	if sh["MainPID"] != strconv.Itoa(r.PID) {
		t.Errorf("%s has MainPID %s, want the daemon the probe found, %d", r.Unit, sh["MainPID"], r.PID)
	}
	for _, v := range []string{mps.DevicesEnv + "=" + uuid, mps.PipeEnv + "=" + r.Pipe} {
		if !strings.Contains(sh["Environment"], v) {
			t.Errorf("%s: Environment %q lacks %s", r.Unit, sh["Environment"], v)
		}
	}
	if !strings.Contains(sh["ExecStart"], mpsBin+" ; argv[]="+mpsBin+" -f ") {
		t.Errorf("%s: ExecStart %q, want %s -f", r.Unit, sh["ExecStart"], mpsBin)
	}

	daemonCg, err := node.CgroupOf(ctx, r.PID)
	if err != nil {
		t.Fatalf("the daemon (pid %d) is gone once the probe's unit ended: %v", r.PID, err)
	}
	slurmd, err := node.MainPID(ctx, "slurmd.service")
	if err != nil {
		t.Fatal(err)
	}
	slurmdCg, err := node.CgroupOf(ctx, slurmd)
	if err != nil {
		t.Fatal(err)
	}
	if daemonCg != cgroup || daemonCg == r.Self || daemonCg == slurmdCg {
		t.Errorf("the daemon (pid %d) is in %s; want its unit's %s (the probe ran in %s, slurmd runs in %s)", r.PID, daemonCg, cgroup, r.Self, slurmdCg)
	}
	if !strings.HasPrefix(r.Self, "/system.slice/gpuprep-test-mpsprobe") {
		t.Errorf("the probe ran in %s, want its own unit's cgroup (systemd-run)", r.Self)
	}
	procs := procsOf(t, ctx, cgroup)
	if !slices.Contains(procs, r.PID) || len(procs) != 2 {
		t.Errorf("%s holds %v; want the daemon %d and its server", cgroup, procs, r.PID)
	}

	// The client, run as mps.Exec.Servers runs it.
	out := MustRun(t, ctx, fmt.Sprintf("echo get_server_list | env %s=%s %s=%s %s", mps.PipeEnv, r.Pipe, mps.LogEnv, filepath.Join(r.Dir, "log"), mpsBin))
	server, err = strconv.Atoi(strings.TrimSpace(out))
	if err != nil || !slices.Contains(procs, server) || server == r.PID {
		t.Errorf("get_server_list printed %q; want the server, one of %v other than the daemon", out, procs)
	}
	perms := MustRun(t, ctx, fmt.Sprintf("stat -c '%%U %%a' %s %s", r.Pipe, filepath.Join(r.Dir, "log")))
	if got := strings.Fields(perms); !slices.Equal(got, []string{"root", "710", "root", "700"}) {
		t.Errorf("pipe and log directories: %q, want root 710 and root 700", perms)
	}
	acl := MustRun(t, ctx, `python3 -c 'import os,sys; print(os.getxattr(sys.argv[1], "system.posix_acl_access").hex())' `+r.Pipe)
	uid := strings.TrimSpace(MustRun(t, ctx, "id -u "+vmnode.Quote(user)))
	if want := aclHex(t, uid); strings.TrimSpace(acl) != want {
		t.Errorf("pipe directory ACL %s; want %s (user::rwx user:%s:--x group::--- mask::--x other::---)", acl, want, uid)
	}
	return cgroup, server
}

// checkGone checks that nothing of the daemon is left once the probe's
// stop is done: no unit (collected) or an inactive one, no cgroup, no
// process, no directory.
func checkGone(t *testing.T, ctx context.Context, r mpsProbeResult, cgroup string, pids ...int) {
	t.Helper()
	sh := unitShow(t, ctx, r.Unit, "LoadState", "ActiveState")
	if sh["LoadState"] != "not-found" && sh["ActiveState"] != "inactive" {
		t.Errorf("after stop, %s is %v; want gone (collected) or inactive", r.Unit, sh)
	}
	if Exists(t, ctx, "/sys/fs/cgroup"+cgroup) {
		t.Errorf("after stop, the cgroup %s is still there (processes %v)", cgroup, procsOf(t, ctx, cgroup))
	}
	for _, pid := range pids {
		if Exists(t, ctx, "/proc/"+strconv.Itoa(pid)) {
			t.Errorf("after stop, pid %d still runs: %s", pid, MustRun(t, ctx, "ps -o pid,stat,cmd -p "+strconv.Itoa(pid)+" || true"))
		}
	}
	if Exists(t, ctx, r.Dir) {
		t.Errorf("after stop, %s is still there", r.Dir)
	}
	if j := MustRun(t, ctx, "journalctl -q --no-pager -u "+vmnode.Quote(r.Unit)+" | tail -n 8"); strings.TrimSpace(j) != "" {
		t.Logf("journal of %s:\n%s", r.Unit, j)
	}
}

// plantMarkers makes the daemon's directory as mps.Create leaves it
// (root's 0755) with the simulator's markers in it: fake-server (the
// daemon starts a server) and, with ignoreQuit, fake-ignore-quit.
func plantMarkers(t *testing.T, ctx context.Context, p mps.Paths, ignoreQuit bool) {
	t.Helper()
	cmd := fmt.Sprintf("install -d -m 0755 %[1]s && touch %[1]s/fake-server", p.Dir)
	if ignoreQuit {
		cmd += " && touch " + p.Dir + "/fake-ignore-quit"
	}
	MustRun(t, ctx, cmd)
}

// A daemon started as the prolog starts it runs in a unit of its own,
// outlives the process that started it and a restart of slurmd, and
// quit ends it and its unit; nothing is left. The same for a user whose
// name has a dash (escaped in the unit's name).
func TestMPSThroughSystemd(t *testing.T) {
	Node(t)
	ctx := Ctx(t, 5*time.Minute)
	installMPSProbe(t, ctx)
	const uuid = "GPU-0a1b2c3d-4e5f-6789-abcd-ef0123456789"
	p, unit := mpsDaemon(t, mpsUser, uuid)
	plantMarkers(t, ctx, p, false)

	r, took := runProbe(t, ctx, mpsUser, "start", uuid)
	if r.Unit != unit || r.Pipe != p.Pipe || r.PID <= 0 {
		t.Fatalf("start printed %+v; want unit %s, pipe %s and a pid", r, unit, p.Pipe)
	}
	cgroup, server := checkRunning(t, ctx, r, mpsUser, uuid)

	// What a package upgrade of Slurm or systemd does meanwhile.
	MustRun(t, ctx, "systemctl daemon-reexec && systemctl restart slurmd")
	if _, _, err := node.WaitNodeState(ctx, "idle"); err != nil {
		t.Fatalf("after restarting slurmd: %v", err)
	}
	if sh := unitShow(t, ctx, r.Unit, "ActiveState", "MainPID"); sh["ActiveState"] != "active" || sh["MainPID"] != strconv.Itoa(r.PID) {
		t.Errorf("after daemon-reexec and a restart of slurmd, %s is %v; want active with the daemon %d", r.Unit, sh, r.PID)
	}

	s, stopTook := runProbe(t, ctx, mpsUser, "stop", uuid, "-wait", "10s")
	if s.Stopped == nil || !s.Stopped.Quit || s.Stopped.Daemon != r.PID || len(s.Stopped.Killed) > 0 {
		t.Errorf("stop: %+v; want the daemon %d quit, nothing killed", s.Stopped, r.PID)
	}
	checkGone(t, ctx, r, cgroup, r.PID, server)
	t.Logf("timing: start %v (in a systemd-run unit), stop %v", took.Round(time.Millisecond), stopTook.Round(time.Millisecond))

	MustRun(t, ctx, "useradd --no-create-home --user-group "+mpsDashUser)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		node.Run(ctx, "userdel "+mpsDashUser)
	})
	p2, unit2 := mpsDaemon(t, mpsDashUser, uuid)
	if !strings.Contains(unit2, `mps\x2duser`) {
		t.Errorf("unit %s: want the dash of %s escaped", unit2, mpsDashUser)
	}
	plantMarkers(t, ctx, p2, false)
	r2, _ := runProbe(t, ctx, mpsDashUser, "start", uuid)
	if r2.Unit != unit2 {
		t.Errorf("start printed unit %s, want %s", r2.Unit, unit2)
	}
	cgroup2, server2 := checkRunning(t, ctx, r2, mpsDashUser, uuid)
	s2, _ := runProbe(t, ctx, mpsDashUser, "stop", uuid)
	if s2.Stopped == nil || !s2.Stopped.Quit {
		t.Errorf("stop: %+v; want the daemon quit", s2.Stopped)
	}
	checkGone(t, ctx, r2, cgroup2, r2.PID, server2)
}

// A daemon that ignores quit (and SIGTERM) is killed once the wait is
// over, and its unit, failed, is collected: nothing is left, and the
// next start of the same daemon works.
func TestMPSThroughSystemdKill(t *testing.T) {
	Node(t)
	ctx := Ctx(t, 5*time.Minute)
	installMPSProbe(t, ctx)
	const uuid = "GPU-ffeeddcc-bbaa-9988-7766-554433221100"
	p, _ := mpsDaemon(t, mpsUser, uuid)
	plantMarkers(t, ctx, p, true)

	r, _ := runProbe(t, ctx, mpsUser, "start", uuid)
	cgroup, server := checkRunning(t, ctx, r, mpsUser, uuid)

	const wait = 3 * time.Second
	s, took := runProbe(t, ctx, mpsUser, "stop", uuid, "-wait", wait.String())
	if s.Stopped == nil || s.Stopped.Quit || !slices.Contains(s.Stopped.Killed, r.PID) {
		t.Errorf("stop: %+v; want the daemon %d killed", s.Stopped, r.PID)
	}
	// The wait, the 2 s grace for the killed to go, and SSH under TCG.
	if took > wait+15*time.Second {
		t.Errorf("stop took %v with a wait of %v", took, wait)
	}
	checkGone(t, ctx, r, cgroup, r.PID, server)
	t.Logf("timing: stop with a daemon that ignores quit %v (wait %v)", took.Round(time.Millisecond), wait)

	// The unit's name is free again (a failed unit left would refuse it).
	plantMarkers(t, ctx, p, false)
	r2, _ := runProbe(t, ctx, mpsUser, "start", uuid)
	cgroup2, server2 := checkRunning(t, ctx, r2, mpsUser, uuid)
	s2, _ := runProbe(t, ctx, mpsUser, "stop", uuid)
	if s2.Stopped == nil || !s2.Stopped.Quit {
		t.Errorf("second stop: %+v; want the daemon quit", s2.Stopped)
	}
	checkGone(t, ctx, r2, cgroup2, r2.PID, server2)
}

// The control case: a daemon started with no launcher, as a child of the
// process that starts it (mps.Exec's own `-d`), is in that process's
// cgroup, and dies once that cgroup is torn down (a prolog's, in
// slurmd's, when systemd stops or restarts slurmd): what the checks above
// would see if mps.Systemd left the daemon where it was started.
func TestMPSWithoutLauncherDiesWithItsCgroup(t *testing.T) {
	Node(t)
	ctx := Ctx(t, 3*time.Minute)
	installMPSProbe(t, ctx)
	const uuid = "GPU-12345678-9abc-def0-1234-56789abcdef0"
	p, _ := mpsDaemon(t, mpsUser, uuid)
	r, _ := runProbe(t, ctx, mpsUser, "start", uuid, "-launcher", "none")
	if r.PID <= 0 {
		t.Fatalf("start printed %+v; want the daemon's pid", r)
	}
	if Exists(t, ctx, "/proc/"+strconv.Itoa(r.PID)) {
		cg, _ := node.CgroupOf(ctx, r.PID)
		t.Errorf("the daemon (pid %d), started in the probe's unit with no launcher, outlived it (in %s)", r.PID, cg)
	}
	s, _ := runProbe(t, ctx, mpsUser, "stop", uuid, "-launcher", "none")
	if s.Stopped == nil || s.Stopped.Daemon != 0 {
		t.Errorf("stop: %+v; want no daemon found", s.Stopped)
	}
	if Exists(t, ctx, p.Dir) {
		t.Errorf("after stop, %s is still there", p.Dir)
	}
}

// aclHex is the system.posix_acl_access value, in hex, of a directory
// that lets uid search it and nobody else but its owner in.
func aclHex(t *testing.T, uid string) string {
	t.Helper()
	n, err := strconv.ParseUint(uid, 10, 32)
	if err != nil {
		t.Fatalf("uid %q: %v", uid, err)
	}
	le32 := func(v uint32) string { return fmt.Sprintf("%02x%02x%02x%02x", v&0xff, v>>8&0xff, v>>16&0xff, v>>24) }
	entry := func(tag, perm uint16, id uint32) string {
		return fmt.Sprintf("%02x%02x%02x%02x", tag&0xff, tag>>8, perm&0xff, perm>>8) + le32(id)
	}
	return le32(2) + entry(1, 7, 0xffffffff) + entry(2, 1, uint32(n)) + entry(4, 0, 0xffffffff) + entry(0x10, 1, 0xffffffff) + entry(0x20, 0, 0xffffffff)
}

// The attack of issue 30 on the VM's real kernel, /run and systemd: while
// the daemon gpuprep started for alice runs, alice tries to plant a deep
// tree and a symlink in its pipe directory, to remove its socket and to
// list it, and cannot; her client still reaches the daemon; the stop (the
// epilog's part) leaves nothing, and the node stays idle, slurmd active.
func TestMPSPipeDirUserCannotPlant(t *testing.T) {
	Node(t)
	ctx := Ctx(t, 5*time.Minute)
	installMPSProbe(t, ctx)
	const uuid = "GPU-5a1b2c3d-4e5f-6789-abcd-ef0123456789"
	p, _ := mpsDaemon(t, mpsUser, uuid)
	plantMarkers(t, ctx, p, false)
	r, _ := runProbe(t, ctx, mpsUser, "start", uuid)
	cgroup, server := checkRunning(t, ctx, r, mpsUser, uuid)
	for _, a := range []string{
		"mkdir -p " + r.Pipe + "/d/d/d/d/d/d/d/d/d/d",
		"ln -s /etc/shadow " + r.Pipe + "/planted",
		"rm -f " + r.Pipe + "/nvidia-cuda-mps-control.pid && ln -s /etc/shadow " + r.Pipe + "/nvidia-cuda-mps-control.pid",
		"rm " + r.Pipe + "/control",
		"ls " + r.Pipe,
		"head -c 1048576 /dev/zero > " + r.Pipe + "/fill",
	} {
		if out, _, err := node.Run(ctx, "runuser -u "+mpsUser+" -- sh -c "+vmnode.Quote(a)); err == nil {
			t.Errorf("alice could run %q on the real kernel: %s", a, out)
		}
	}
	out := MustRunAs(t, ctx, mpsUser, fmt.Sprintf("echo get_server_list | env %s=%s %s", mps.PipeEnv, r.Pipe, mpsBin))
	if strings.TrimSpace(out) != strconv.Itoa(server) {
		t.Errorf("alice's client got %q from her daemon; want its server %d", out, server)
	}
	s, _ := runProbe(t, ctx, mpsUser, "stop", uuid)
	if s.Stopped == nil || !s.Stopped.Quit {
		t.Errorf("stop: %+v; want the daemon quit", s.Stopped)
	}
	checkGone(t, ctx, r, cgroup, r.PID, server)
	if Exists(t, ctx, mpsBase+"/"+mps.TrashName) {
		t.Errorf("%s/%s left after the stop", mpsBase, mps.TrashName)
	}
	if st, reason, err := node.NodeState(ctx); err != nil || st != "idle" {
		t.Errorf("node %s (%s, %v) after alice's attempts, want idle", st, reason, err)
	}
}
