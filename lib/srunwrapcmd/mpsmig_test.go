package srunwrapcmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpuprep/internal/testroot"
	"gpuprep/lib/cpuset"
	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
	"gpuprep/lib/mps"
	"gpuprep/lib/nodedesc"
)

// migDescRoot is a root holding the node description the prolog writes on
// the dgxa100 fixture, whose GPU 0 has two MIG devices (the procfs
// backend lists them; their UUIDs, which it cannot read, are
// mock:dgxa100's, as the prolog's backend fills them in), the MIG UUIDs
// of GPU 0, and the node's CPUs.
func migDescRoot(t *testing.T) (root string, migs []string, all cpuset.Set) {
	t.Helper()
	shared := testroot.Unpack(t, "dgxa100")
	root = t.TempDir()
	for _, r := range []string{shared, root} {
		os.MkdirAll(filepath.Join(r, "proc/sys/kernel/random"), 0o755)
		os.WriteFile(filepath.Join(r, "proc/sys/kernel/random/boot_id"), []byte("6c3a3a46-0d7f-4a55-b2bd-2a4b6a4c6d2e\n"), 0o644)
	}
	d, err := nodedesc.Build(host.NewRoot(shared), gpu.OpenProcfs(host.NewRoot(shared)), nodedesc.Settings{}, "test")
	if err != nil {
		t.Fatal(err)
	}
	ms := d.Node.GPUs[0].MIG.Devices
	for i, u := range []string{"MIG-d3278de5-bff1-7ce6-827b-4f3167a8cb04", "MIG-c7084fa3-7b13-75f5-db76-db7749cec117"} {
		if i < len(ms) {
			ms[i].UUID = u
		}
	}
	online, err := os.ReadFile(filepath.Join(shared, "sys/devices/system/cpu/online"))
	if err != nil {
		t.Fatal(err)
	}
	all = cpuset.MustParse(strings.TrimSpace(string(online)))
	for _, m := range d.Node.GPUs[0].MIG.Devices {
		migs = append(migs, m.UUID)
	}
	if len(migs) != 2 || !strings.HasPrefix(migs[0], "MIG-") {
		t.Fatalf("GPU 0's MIG devices in the node description: %v", migs)
	}
	if err := nodedesc.Write(host.NewRoot(root), d); err != nil {
		t.Fatal(err)
	}
	return root, migs, all
}

// migRank is one rank of alice's job whose step sees the MIG device uuid
// (CUDA_VISIBLE_DEVICES by MIG UUID).
func migRank(uuid string) []string {
	return []string{"PATH=/usr/bin:/bin", "HOME=/home/alice", "SLURM_JOB_ID=77", "SLURM_STEP_ID=0", "SLURM_PROCID=0", "SLURM_LOCALID=0",
		"SLURM_NODEID=0", "SLURM_NTASKS=1", "SLURM_STEP_TASKS_PER_NODE=1", "CUDA_VISIBLE_DEVICES=" + uuid, "SLURM_JOB_USER=alice", "USER=alice"}
}

// Issue 36 §4: a rank on a MIG device gets the pipe and log directories of
// the daemon gpuprep-prolog started for that MIG device (keyed by its MIG
// UUID); a rank on the other MIG device of the same GPU, which has no
// daemon, gets none.
func TestMPSOnMIGDevice(t *testing.T) {
	root, migs, all := migDescRoot(t)
	p := mpsDaemon(t, root, "alice", migs[1])
	f := &fakeOS{allowed: all, job: all}
	_, _, stderr := runWrap(t, f, migRank(migs[1]), "--root", root, "--", "python")
	if f.execCalls != 1 {
		t.Fatalf("exec calls %d: %s", f.execCalls, stderr)
	}
	for name, want := range map[string]string{mps.PipeEnv: p.Pipe, mps.LogEnv: p.Log, "CUDA_VISIBLE_DEVICES": migs[1]} {
		if got := envOf(f.execEnv, name); got != want {
			t.Errorf("rank on %s: %s=%q, want %q (stderr %s)", migs[1], name, got, want, stderr)
		}
	}
	f = &fakeOS{allowed: all, job: all}
	_, out, _ := runWrap(t, f, migRank(migs[0]), "--root", root, "--explain")
	if want := "no MPS daemon for you on MIG device " + migs[0]; !strings.Contains(out, want) {
		t.Errorf("rank on %s: --explain lacks %q:\n%s", migs[0], want, out)
	}
	f = &fakeOS{allowed: all, job: all}
	runWrap(t, f, migRank(migs[0]), "--root", root, "--", "python")
	if got := envOf(f.execEnv, mps.PipeEnv); got != "" {
		t.Errorf("rank on %s (no daemon): %s=%q", migs[0], mps.PipeEnv, got)
	}
}
