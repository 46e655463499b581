package vmtest

import (
	"strings"
	"testing"
	"time"
)

// The fake-Xid trick of the trust issue, by an unprivileged user on a real
// kernel: in a user namespace of her own, alice mounts a tmpfs with a mount
// option that reads like the NVIDIA driver's Xid line, and the kernel logs
// it (kernel facility, "tmpfs: Unknown parameter 'NVRM: Xid ...'"). The
// node must stay up: her next job runs, the prolog's health checks see no
// Xid, and the node is not drained.
//
// She calls mount(2) itself: mount(8) of util-linux 2.39 and later (Debian
// 13's) uses the new mount API, whose errors go back to the caller and not
// to the kernel log (seen in the trixie VM), while mount(2) still logs
// them (a filesystem context without a log prints to the kernel's).
func TestUserCannotForgeXid(t *testing.T) {
	Node(t)
	ctx := Ctx(t, 5*time.Minute)
	const forged = "NVRM: Xid (PCI:0000:00:06): 79, pid=1, name=train"
	MustRunAs(t, ctx, "alice", `mkdir -p /tmp/xid && unshare -Urm python3 -c 'import ctypes; ctypes.CDLL(None).mount(b"none", b"/tmp/xid", b"tmpfs", 0, b"`+forged+`")' || true`)
	if kmsg := MustRun(t, ctx, "dmesg | tail -n 20"); !strings.Contains(kmsg, "NVRM: Xid (PCI:0000:00:06): 79") {
		t.Fatalf("the forged line did not reach the kernel log, so this test shows nothing:\n%s", kmsg)
	}
	shortJob(t, ctx)
	if st, reason, _ := node.NodeState(ctx); st != "idle" {
		t.Errorf("node %s (%s) after alice's forged Xid, want idle", st, reason)
	}
	out, _, err := node.Run(ctx, "gpuprep-prolog --health")
	if err != nil || !strings.Contains(out, "no new XIDs") && !strings.Contains(out, "xid") {
		t.Errorf("gpuprep-prolog --health after the forged line: %v\n%s", err, out)
	}
	if strings.Contains(out, "Xid 79") {
		t.Errorf("the health check counts alice's forged Xid:\n%s", out)
	}
}
