package vmnode

import (
	"os"
	"os/exec"
	"path/filepath"
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
