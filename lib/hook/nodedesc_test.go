package hook

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"

	"gpuprep/internal/testroot"
	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
	"gpuprep/lib/nodedesc"
	"gpuprep/lib/plan"
	"gpuprep/lib/srunconf"
)

const testBoot = "5fdd1806-8066-4c6b-9d9e-0a1b2c3d4e5f"

// The prolog writes the node description srunwrap reads once: a second
// prolog finds it current and leaves the file alone; a changed [srunwrap]
// section rewrites it. The light backend's MIG devices get their UUIDs.
func TestPrologWritesNodeDescriptionOnce(t *testing.T) {
	e := newEnv(t, "dgxa100", "mock:dgxa100")
	gpu.Light(e.gpu) // as gpuprep-prolog runs it
	e.write(host.BootIDPath, testBoot+"\n")
	r := host.NewRoot(e.root)

	o := e.opts(1, []int{1}, "")
	o.Version = "1.0"
	out, err := Prolog(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if out.NodeDescription != nodedesc.Path {
		t.Fatalf("outcome says %q", out.NodeDescription)
	}
	d, err := nodedesc.Load(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Node.GPUs) != 8 || d.Gpuprep != "1.0" || d.BootID != testBoot {
		t.Errorf("description: %d GPUs, gpuprep %q, boot %q", len(d.Node.GPUs), d.Gpuprep, d.BootID)
	}
	migs := d.Node.GPUs[0].MIG.Devices
	if len(migs) != 2 || migs[0].UUID == "" || migs[1].UUID == "" {
		t.Errorf("GPU 0's MIG devices lack UUIDs: %+v", migs)
	}
	before, err := os.Stat(r.Path(nodedesc.Path))
	if err != nil {
		t.Fatal(err)
	}

	o = e.opts(2, []int{2}, "")
	o.Version = "1.0"
	if out, err = Prolog(context.Background(), o); err != nil || out.NodeDescription != "unchanged" {
		t.Fatalf("second prolog: %v, %q", err, out.NodeDescription)
	}
	after, _ := os.Stat(r.Path(nodedesc.Path))
	if !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
		t.Error("the second prolog rewrote an unchanged description")
	}

	cfg := *e.cfg
	cfg.Srunwrap.Memory = srunconf.MemPreferred
	o = e.opts(3, []int{3}, "")
	o.Version, o.Config = "1.0", &cfg
	if out, err = Prolog(context.Background(), o); err != nil || out.NodeDescription != nodedesc.Path {
		t.Fatalf("prolog after a config change: %v, %q", err, out.NodeDescription)
	}
	if d, err := nodedesc.Load(r); err != nil || d.Srunwrap.Memory != srunconf.MemPreferred {
		t.Errorf("rewritten description: %v", err)
	}

	// A dry run writes nothing.
	if err := os.Remove(r.Path(nodedesc.Path)); err != nil {
		t.Fatal(err)
	}
	o = e.opts(4, []int{4}, "")
	o.DryRun = true
	if out, err = Prolog(context.Background(), o); err != nil || out.NodeDescription != "" {
		t.Fatalf("dry run: %v, %q", err, out.NodeDescription)
	}
	if _, err := os.Stat(r.Path(nodedesc.Path)); !os.IsNotExist(err) {
		t.Errorf("dry run wrote the description: %v", err)
	}
}

// The prolog tells the job's user, through srunwrap, that the profile it
// asked for fell back and which knobs this node skipped; the epilog removes
// the notice. A job with nothing to be told gets no file.
func TestPrologNotices(t *testing.T) {
	e := newEnv(t, "cloudvm", "mock:dgxh200") // no cpufreq in the VM
	r := host.NewRoot(e.root)

	out := e.prolog(5, nil, "gpuprep=strict")
	n, err := nodedesc.LoadNotice(r, 5)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(n.Messages, "\n")
	if n.Job != 5 || !strings.Contains(text, `profile "strict" cannot be applied`) || !strings.Contains(text, "cpu_governor skipped on this node") {
		t.Errorf("notice %+v", n)
	}
	t.Logf("notices:\n%s", text)
	if strings.Join(out.Notices, "\n") != text {
		t.Errorf("outcome notices %q, file %q", out.Notices, n.Messages)
	}
	for _, m := range n.Messages {
		if strings.Contains(m, "\n") {
			t.Errorf("message of several lines: %q", m)
		}
	}

	e.epilog(5)
	if n, err := nodedesc.LoadNotice(r, 5); err != nil || len(n.Messages) != 0 {
		t.Errorf("after the epilog: %+v, %v", n, err)
	}
	e.epilog(5) // idempotent

	// A request the selection ignored is the user's to know too.
	out = e.prolog(7, nil, "gpuprep=strcit")
	if want := `profile "strcit" requested by --comment gpuprep=strcit is not defined`; !strings.Contains(strings.Join(out.Notices, "\n"), want) {
		t.Errorf("notices %q, want one with %q", out.Notices, want)
	}
	e.epilog(7)

	// Nothing to say: the profile applies without a skip.
	plain, err := config.Parse("test.toml", []byte("[profiles.default]\nvm_swappiness = 10\n"))
	if err != nil {
		t.Fatal(err)
	}
	o := e.opts(6, nil, "")
	o.Config = plain
	out, err = Prolog(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Notices) != 0 {
		t.Errorf("notices for a plain job: %q", out.Notices)
	}
	if _, err := os.Stat(r.Path(nodedesc.NoticeDir + "/6")); !os.IsNotExist(err) {
		t.Errorf("notice file for a job with nothing to say: %v", err)
	}
}

// A /run/gpuprep that another user could write before the first prolog
// (here nobody's, world-writable, with a description planted in it) is
// moved aside by the prolog with a warning, and made afresh, root's 0755:
// srunwrap then reads the prolog's description, never the planted one.
func TestPrologMovesAsideUntrustedRunDir(t *testing.T) {
	testroot.NeedRoot(t, "chown")
	e := newEnv(t, "dgxa100", "mock:dgxa100")
	gpu.Light(e.gpu)
	e.write(host.BootIDPath, testBoot+"\n")
	r := host.NewRoot(e.root)
	dir := r.Path("/run/gpuprep")
	planted := "gpuprep-node-description 2\nboot_id " + testBoot + "\n"
	if os.MkdirAll(dir, 0o777) != nil || os.WriteFile(dir+"/node-description", []byte(planted), 0o644) != nil ||
		os.Chown(dir+"/node-description", 65534, 65534) != nil || os.Chown(dir, 65534, 65534) != nil || os.Chmod(dir, 0o777) != nil {
		t.Fatal("cannot plant")
	}
	o := e.opts(1, []int{1}, "")
	o.Version = "1.0"
	out, err := Prolog(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(plan.Texts(out.Warnings), "\n"), dir+" was owned by uid 65534, not by the writer (uid 0): moved aside to ") {
		t.Errorf("no warning of the move: %q", out.Warnings)
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode() != os.ModeDir|0o755 || fi.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Errorf("/run/gpuprep afterwards: %v, %v", fi, err)
	}
	if d, err := nodedesc.Load(r); err != nil || d.Gpuprep != "1.0" || len(d.Node.GPUs) != 8 {
		t.Errorf("the description read: %+v, %v", d, err)
	}
}
