package vmnode

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Quote keeps any string one word for sh: the VM runs every command through
// a shell, so a path or script with quotes, spaces or $ must arrive as is.
func TestQuoteRoundTrip(t *testing.T) {
	for _, s := range []string{"", "plain/path-1.0", "two words", "it's", `"$HOME" \n`, "a'b'c", "*", "x\ny"} {
		out, err := exec.Command("sh", "-c", "printf %s "+Quote(s)).Output()
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if string(out) != s {
			t.Errorf("Quote(%q) came back as %q", s, out)
		}
	}
}

func TestParseScontrol(t *testing.T) {
	line := "JobId=7 JobName=wrap UserId=alice(1000) JobState=RUNNING Reason=None Dependency=(null) Socks/Node=* NtasksPerN:B:S:C=0:0:*:* TRES=cpu=1,node=1,billing=1 Comment=two words NodeList=gpunode\n"
	m := ParseScontrol(line)
	for k, want := range map[string]string{"JobId": "7", "JobState": "RUNNING", "Socks/Node": "*", "TRES": "cpu=1,node=1,billing=1", "Comment": "two words", "NodeList": "gpunode"} {
		if m[k] != want {
			t.Errorf("%s = %q, want %q", k, m[k], want)
		}
	}
}

// OpenImage refuses a folder that lacks a file of a finished image (a build
// killed before its rename never looks finished).
func TestOpenImage(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "vm.sh")
	for _, f := range []string{"rootfs.img", "vmlinuz", "initrd.img", "id_ed25519", "vm.sh"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := OpenImage(dir, script); err == nil {
		t.Fatal("image without image.env accepted")
	}
	env := "# comment\nKEY=abc\nSLURM_VERSION=22.05.8-4+deb12u3\n"
	if err := os.WriteFile(filepath.Join(dir, "image.env"), []byte(env), 0o644); err != nil {
		t.Fatal(err)
	}
	img, err := OpenImage(dir, script)
	if err != nil {
		t.Fatal(err)
	}
	if img.Info["KEY"] != "abc" || img.Info["SLURM_VERSION"] != "22.05.8-4+deb12u3" || img.Key != filepath.Join(dir, "id_ed25519") {
		t.Errorf("image %+v", img)
	}
	os.Remove(filepath.Join(dir, "initrd.img"))
	if _, err := OpenImage(dir, script); err == nil {
		t.Error("image without initrd.img accepted")
	}
}

// The job's cgroup is read from where its slurmstepds run: job_<id> on
// Slurm 22.05 and 24.11, the job's SLUID on 26.05 (both seen in the VM),
// never the scope's own "system" cgroup.
func TestJobCgroupOf(t *testing.T) {
	for out, want := range map[string]string{
		"/system.slice/gpunode_slurmstepd.scope/job_5/step_extern/slurm\n/system.slice/gpunode_slurmstepd.scope/job_5/step_batch/slurm\n": "/sys/fs/cgroup/system.slice/gpunode_slurmstepd.scope/job_5",
		"/system.slice/gpunode_slurmstepd.scope/system\n/system.slice/gpunode_slurmstepd.scope/s6KSM8TX3WZG00/step_extern/slurm\n":        "/sys/fs/cgroup/system.slice/gpunode_slurmstepd.scope/s6KSM8TX3WZG00",
	} {
		if got, err := jobCgroupOf(5, out); err != nil || got != want {
			t.Errorf("jobCgroupOf(%q) = %q, %v; want %q", out, got, err, want)
		}
	}
	for _, out := range []string{"", "/system.slice/gpunode_slurmstepd.scope/system\n", "/system.slice/slurmd.service\n"} {
		if got, err := jobCgroupOf(5, out); err == nil {
			t.Errorf("jobCgroupOf(%q) = %q, want an error", out, got)
		}
	}
	// The pgrep pattern matches job 5's slurmstepds only.
	re := `^slurmstepd: \[5\.`
	for name, want := range map[string]bool{"slurmstepd: [5.extern]": true, "slurmstepd: [5.batch]": true, "slurmstepd: [55.batch]": false, "slurmstepd: [15.0]": false} {
		err := exec.Command("sh", "-c", "printf '%s\\n' "+Quote(name)+" | grep -Eq "+Quote(re)).Run()
		if (err == nil) != want {
			t.Errorf("pattern %s on %q: match=%v, want %v", re, name, err == nil, want)
		}
	}
	if !strings.Contains(jobCgroupCmd(5), re) {
		t.Errorf("jobCgroupCmd(5) = %q does not use %s", jobCgroupCmd(5), re)
	}
}

func TestParseSlurmVersion(t *testing.T) {
	for out, want := range map[string][2]int{"slurm-wlm 26.05.5\n": {26, 5}, "slurm 22.05.8\n": {22, 5}, "slurm-wlm 24.11.5": {24, 11}} {
		if ma, mi, err := parseSlurmVersion(out); err != nil || ma != want[0] || mi != want[1] {
			t.Errorf("parseSlurmVersion(%q) = %d.%d, %v; want %d.%d", out, ma, mi, err, want[0], want[1])
		}
	}
	for _, bad := range []string{"", "slurm", "slurm x.y", "sinfo: error: something"} {
		if _, _, err := parseSlurmVersion(bad); err == nil {
			t.Errorf("parseSlurmVersion(%q): no error", bad)
		}
	}
}

// A guest kernel panic on the serial console is named in the diagnostics.
func TestPanic(t *testing.T) {
	v := &VM{SerialLog: filepath.Join(t.TempDir(), "serial.log")}
	if p := v.Panic(); p != "" {
		t.Errorf("no serial log: Panic = %q", p)
	}
	os.WriteFile(v.SerialLog, []byte("[ 1.0] systemd[1]: Started x.\r\n[ 242.5] Oops: int3: 0000 [#1] SMP NOPTI\r\n[ 242.56] Kernel panic - not syncing: Fatal exception in interrupt\r\n[ 0.0] Linux version 7.2\r\n"), 0o644)
	if p := v.Panic(); !strings.Contains(p, "Kernel panic - not syncing") || !strings.Contains(p, "Oops: int3") || strings.Contains(p, "\r") {
		t.Errorf("Panic = %q", p)
	}
	os.WriteFile(v.SerialLog, []byte("[ 1.0] systemd[1]: Started x.\n"), 0o644)
	if p := v.Panic(); p != "" {
		t.Errorf("a clean console: Panic = %q", p)
	}
}
