package pkgtest

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"gpuprep/internal/testroot"
)

// TestDebUpgrade is an admin's upgrade of a node in Debian 12 from release
// 0.1.0's package (built from its commit, previousDeb) to this one while a
// job holds settings, and the life of the package after it: the new
// epilog restores what the old prolog set, exactly; 0.1.0's conffile goes
// where unedited and stays where edited, without a question; a spool of a
// newer gpuprep is refused with nothing touched; removal is refused while
// a job holds settings; purge leaves no gpuprep file.
func TestDebUpgrade(t *testing.T) {
	needRoot(t)
	need(t, "chroot", "debootstrap", "cp")
	deb, _ := packages(t)
	old := previousDeb(t)
	cached := strings.TrimSpace(run(t, "sh", filepath.Join(pkgs.repo, "test/pkgtest/mkroot.sh"), "bookworm"))

	t.Run("a held job's settings across the upgrade", func(t *testing.T) {
		n := newDebNode(t, cached, old, deb)
		n.ok("dpkg", "-i", "/tmp/old.deb")
		n.writeConfig(jobConfig) // the admin edits 0.1.0's conffile
		baseline := n.snapshot()
		n.ok(n.hook("prolog", "7")...)
		if applied := n.snapshot(); applied.equal(baseline) {
			t.Fatal("0.1.0's prolog changed nothing on the fixture node: the test would prove nothing")
		}
		out := n.ok("dpkg", "-i", "/tmp/new.deb")
		n.noConffilePrompt(out)
		if got := n.read("etc/gpuprep/gpuprep.toml"); got != jobConfig {
			t.Errorf("the edited conffile after the upgrade reads %q", got)
		}
		n.ok(n.hook("epilog", "7")...)
		if diff := n.snapshot().diff(baseline); diff != "" {
			t.Errorf("after the new epilog the node is not at its baseline:\n%s", diff)
		}
		if log := n.read("var/log/gpuprep.log"); !strings.Contains(log, "state dir of an older gpuprep") {
			t.Errorf("the new epilog does not say it read 0.1.0's spool; its log:\n%s", log)
		}
		n.ok("gpuprep-epilog", "--held")
	})

	t.Run("an unedited conffile goes, without a question", func(t *testing.T) {
		n := newDebNode(t, cached, old, deb)
		n.ok("dpkg", "-i", "/tmp/old.deb")
		if !n.exists("etc/gpuprep/gpuprep.toml") {
			t.Fatal("0.1.0 installed no /etc/gpuprep/gpuprep.toml")
		}
		n.noConffilePrompt(n.ok("dpkg", "-i", "/tmp/new.deb"))
		if n.exists("etc/gpuprep/gpuprep.toml") {
			t.Errorf("0.1.0's unedited gpuprep.toml is still there after the upgrade")
		}
		n.ok("dpkg", "--purge", "gpuprep")
		if found := gpuprepFiles(t, n.root); len(found) > 0 {
			t.Errorf("after the purge these gpuprep files remain: %v", found)
		}
	})

	t.Run("a newer gpuprep's spool is refused, untouched", func(t *testing.T) {
		n := newDebNode(t, cached, old, deb)
		n.ok("dpkg", "-i", "/tmp/new.deb")
		n.writeConfig(jobConfig)
		n.ok(n.hook("prolog", "7")...)
		if err := os.WriteFile(filepath.Join(n.root, "var/lib/gpuprep/format"), []byte("2\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		node, spool := n.snapshot(), n.tree("var/lib/gpuprep")
		_, stderr, err := n.in(n.hook("epilog", "7")...)
		if err == nil || !strings.Contains(stderr, "format 2") || !strings.Contains(stderr, "refusing") {
			t.Errorf("the epilog on a format 2 spool: %v, stderr %q; want a refusal naming format 2", err, stderr)
		}
		if diff := n.snapshot().diff(node); diff != "" {
			t.Errorf("the refused epilog changed the node:\n%s", diff)
		}
		if diff := n.tree("var/lib/gpuprep").diff(spool); diff != "" {
			t.Errorf("the refused epilog changed the spool:\n%s", diff)
		}
	})

	t.Run("removal refused while a job holds settings; purge leaves nothing", func(t *testing.T) {
		n := newDebNode(t, cached, old, deb)
		n.ok("dpkg", "-i", "/tmp/new.deb")
		n.writeConfig(jobConfig)
		n.write("etc/slurm/slurm.conf", "ClusterName=c\nProlog=/usr/sbin/gpuprep-prolog\n")
		baseline := n.snapshot()
		n.ok(n.hook("prolog", "7")...)
		_, stderr, err := n.in("dpkg", "-r", "gpuprep")
		if err == nil || !strings.Contains(stderr, "jobs still hold settings") || !strings.Contains(stderr, "alice") || !strings.Contains(stderr, "--restore-all") {
			t.Errorf("dpkg -r with job 7 holding settings: %v, stderr %q", err, stderr)
		}
		if !n.exists("usr/sbin/gpuprep-epilog") {
			t.Fatal("the refused removal removed gpuprep-epilog")
		}
		n.ok("gpuprep-epilog", "--root", "/tmp/node", "--gpu-backend", "procfs", "--restore-all", "--force")
		if diff := n.snapshot().diff(baseline); diff != "" {
			t.Errorf("after --restore-all --force the node is not at its baseline:\n%s", diff)
		}
		_, stderr, err = n.in("dpkg", "-r", "gpuprep")
		if err != nil || !strings.Contains(stderr, "slurm.conf still names gpuprep") {
			t.Errorf("dpkg -r after --restore-all: %v; want success and a warning about slurm.conf, stderr %q", err, stderr)
		}
		left := leaveGpuprepFiles(t, n.root)
		n.ok("dpkg", "--purge", "gpuprep")
		if found := gpuprepFiles(t, n.root); len(found) > 0 {
			t.Errorf("after dpkg --purge these gpuprep files remain: %v", found)
		}
		for _, keep := range left.others {
			if !n.exists(keep) {
				t.Errorf("dpkg --purge removed %s, not gpuprep's", keep)
			}
		}
	})
}

// jobConfig is the admin's gpuprep.toml: a profile of node settings
// release 0.1.0 already had, on the fixture node (the GPUs are not
// there), logging to the log file.
const jobConfig = `[general]
log_file = "/var/log/gpuprep.log"
metrics_dir = ""

[profiles.default]
vm_swappiness = 10
thp_enabled = "never"
kernel_numa_balancing = 0
cpu_governor = "performance"
`

// debNode is a copy of the cached Debian root holding both packages
// (/tmp/old.deb, /tmp/new.deb) and a fixture node (/tmp/node, the
// programs' --root).
type debNode struct {
	t    *testing.T
	root string
}

func newDebNode(t *testing.T, cached, old, deb string) *debNode {
	t.Helper()
	t.Parallel()
	root := filepath.Join(t.TempDir(), "root")
	run(t, "cp", "-a", cached, root)
	for name, src := range map[string]string{"tmp/old.deb": old, "tmp/new.deb": deb} {
		if err := os.WriteFile(filepath.Join(root, name), mustRead(t, src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(t, "cp", "-a", testroot.Unpack(t, "h200x2"), filepath.Join(root, "tmp/node"))
	return &debNode{t: t, root: root}
}

// in runs args in the root, as root, non-interactively (no terminal, no
// input: a dpkg question fails rather than waits).
func (n *debNode) in(args ...string) (stdout, stderr string, err error) {
	cmd := exec.Command("chroot", append([]string{n.root}, args...)...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND=noninteractive", "LC_ALL=C"}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// ok runs args in the root and fails the test when they fail; it returns
// stdout and stderr together.
func (n *debNode) ok(args ...string) string {
	n.t.Helper()
	out, errOut, err := n.in(args...)
	if err != nil {
		n.t.Fatalf("%s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
	return out + errOut
}

// hook is the command line of gpuprep-<op> for job on the fixture node.
func (n *debNode) hook(op, job string) []string {
	return []string{"env", "SLURM_JOB_ID=" + job, "SLURM_JOB_USER=alice", "SLURM_JOB_UID=1000",
		"gpuprep-" + op, "--root", "/tmp/node", "--gpu-backend", "procfs"}
}

// noConffilePrompt fails when dpkg's output shows a conffile question or
// left a .dpkg-* copy of gpuprep.toml.
func (n *debNode) noConffilePrompt(out string) {
	n.t.Helper()
	if strings.Contains(out, "Configuration file") {
		n.t.Errorf("dpkg asked about a configuration file:\n%s", out)
	}
	for _, suffix := range []string{".dpkg-bak", ".dpkg-dist", ".dpkg-old", ".dpkg-new", ".dpkg-remove", ".dpkg-backup"} {
		if n.exists("etc/gpuprep/gpuprep.toml" + suffix) {
			n.t.Errorf("dpkg left /etc/gpuprep/gpuprep.toml%s", suffix)
		}
	}
}

func (n *debNode) writeConfig(body string) { n.write("etc/gpuprep/gpuprep.toml", body) }

func (n *debNode) write(name, body string) {
	n.t.Helper()
	p := filepath.Join(n.root, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		n.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		n.t.Fatal(err)
	}
}

func (n *debNode) read(name string) string {
	b, _ := os.ReadFile(filepath.Join(n.root, name))
	return string(b)
}

func (n *debNode) exists(name string) bool {
	_, err := os.Lstat(filepath.Join(n.root, name))
	return err == nil
}

// snapshot is the fixture node's files, but the run directory, which
// gpuprep keeps for itself (and /run, made for it on a fixture without
// one). A value is compared as the kernel shows it: without the trailing
// newline a write may leave out.
func (n *debNode) snapshot() files {
	s := n.tree("tmp/node")
	for p, v := range s {
		switch {
		case p == "run" || p == "run/gpuprep" || strings.HasPrefix(p, "run/gpuprep/"):
			delete(s, p)
		default:
			s[p] = strings.TrimRight(v, "\n")
		}
	}
	return s
}

// files are a tree's regular files' contents and its other entries' modes,
// by path relative to it.
type files map[string]string

func (n *debNode) tree(name string) files {
	n.t.Helper()
	top := filepath.Join(n.root, name)
	out := files{}
	err := filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(top, p)
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			out[rel] = string(b)
			return err
		}
		out[rel] = d.Type().String()
		return nil
	})
	if err != nil {
		n.t.Fatal(err)
	}
	return out
}

func (f files) equal(g files) bool { return f.diff(g) == "" }

// diff lists what differs from want, a line per file (at most 20).
func (f files) diff(want files) string {
	var lines []string
	for p, w := range want {
		if got, ok := f[p]; !ok {
			lines = append(lines, p+": gone")
		} else if got != w {
			lines = append(lines, p+": "+clipLine(got)+", want "+clipLine(w))
		}
	}
	for p := range f {
		if _, ok := want[p]; !ok {
			lines = append(lines, p+": new")
		}
	}
	sort.Strings(lines)
	if len(lines) > 20 {
		lines = append(lines[:20], "...")
	}
	return strings.Join(lines, "\n")
}

func clipLine(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 60 {
		s = s[:60] + "..."
	}
	return `"` + s + `"`
}
