package fixturegen

import "fmt"

// slurmdPID is slurmd's process id in every generated root.
const slurmdPID = 1482

// writeSlurmd writes the slurmd every gpuprep prolog runs under, as a
// node shows it: its process in /proc (exe, a link to /usr/sbin/slurmd;
// status, owned by root; cmdline and comm; its cgroup, Debian's
// slurmd.service in system.slice) and its pid file, /run/slurmd.pid
// (SlurmdPidFile's default). The cgroup folders themselves are left to
// the tests that lay out a cgroup tree.
func writeSlurmd(t *tree, l *layout) {
	proc := fmt.Sprintf("proc/%d", slurmdPID)
	t.file("usr/sbin/slurmd", "")
	t.link(proc+"/exe", "usr/sbin/slurmd")
	t.file(proc+"/status", fmt.Sprintf("Name:\tslurmd\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t%d\nNgid:\t0\nPid:\t%d\nPPid:\t1\n"+
		"TracerPid:\t0\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n", slurmdPID, slurmdPID))
	t.file(proc+"/cmdline", "/usr/sbin/slurmd\x00--systemd\x00")
	t.line(proc+"/comm", "slurmd")
	t.line(proc+"/cgroup", "0::/system.slice/slurmd.service")
	t.linef("run/slurmd.pid", "%d", slurmdPID)
}
