package srunwrapcmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"gpuprep/internal/testroot"
	"gpuprep/lib/mps"
)

// dgxh100UUIDs are the fixture's GPU UUIDs in index order.
func dgxh100UUIDs(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, d := range testroot.GPUs(t, testroot.Shared(t, "dgxh100")) {
		out = append(out, d.UUID)
	}
	if len(out) != 8 || out[0] == "" {
		t.Fatalf("dgxh100 GPUs %v: want 8 with UUIDs", out)
	}
	return out
}

// mpsDaemon leaves in root what gpuprep-prolog's running daemon of user on
// uuids leaves in /run/gpuprep/mps (lib/mps: Create, Start, Grant): the
// pipe directory, root's (this process's), with the control socket and
// an ACL entry that lets this process's uid search it, and root's log
// directory. It returns the node paths.
func mpsDaemon(t *testing.T, root, user string, uuids ...string) mps.Paths {
	t.Helper()
	key, err := mps.Key(uuids)
	if err != nil {
		t.Fatal(err)
	}
	p, err := mps.Dirs(mps.DefaultBase, user, key)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{p.Pipe, p.Log} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mknod(filepath.Join(root, p.Pipe, "control"), unix.S_IFSOCK|0o666, 0); err != nil {
		t.Fatal(err)
	}
	on := mps.Paths{Dir: filepath.Join(root, p.Dir), Pipe: filepath.Join(root, p.Pipe), Log: filepath.Join(root, p.Log)}
	if err := mps.Grant(on, os.Getuid()); err != nil {
		t.Fatal(err)
	}
	return p
}

// alice is rank i of 8 on all 8 GPUs, run by alice.
func alice(i int) []string { return append(rankEnv(i, 8), "SLURM_JOB_USER=alice", "USER=alice") }

// A rank whose GPU has the job user's MPS daemon gets its pipe and log
// directories and its GPU by UUID; a rank on another GPU gets nothing;
// another user's job on the daemon's GPU gets nothing either; a
// CUDA_MPS_PIPE_DIRECTORY the user exported wins; --task-prolog exports
// what the rank would get.
func TestMPSEnv(t *testing.T) {
	_, all := dgxh100(t)
	uuids := dgxh100UUIDs(t)
	root := descRoot(t, "")
	p := mpsDaemon(t, root, "alice", uuids[2])
	if !strings.HasPrefix(p.Pipe, "/run/gpuprep/mps/alice-") {
		t.Fatalf("pipe directory %s", p.Pipe)
	}
	for _, c := range []struct {
		name       string
		env        []string
		uid        int // added to this test's uid
		pipe, log  string
		cvd        string
		warnsAbout string
	}{
		{name: "daemon on the rank's GPU", env: alice(2), pipe: p.Pipe, log: p.Log, cvd: uuids[2]},
		{name: "no daemon on the rank's GPU", env: alice(3), cvd: "3"},
		{name: "another user's job", env: withVar(withVar(rankEnv(2, 8), "SLURM_JOB_USER", "bob"), "USER", "bob"), cvd: "2"},
		{name: "another uid with the user's name", env: alice(2), uid: 1, cvd: "2", warnsAbout: "does not let uid"},
		{name: "user's pipe directory", env: append(alice(2), "CUDA_MPS_PIPE_DIRECTORY=/home/alice/mps"), pipe: "/home/alice/mps", cvd: "2"},
		{name: "user's log directory", env: append(alice(2), "CUDA_MPS_LOG_DIRECTORY=/home/alice/log"), pipe: p.Pipe, log: "/home/alice/log", cvd: uuids[2]},
		{name: "USER outside Slurm's variables", env: append(rankEnv(2, 8), "USER=alice"), pipe: p.Pipe, log: p.Log, cvd: uuids[2]},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeOS{allowed: all, job: all}
			if c.uid != 0 {
				f.uid = func() int { return os.Getuid() + c.uid }
			}
			_, _, stderr := runWrap(t, f, c.env, "--root", root, "--", "python")
			if f.execCalls != 1 {
				t.Fatalf("exec calls %d: %s", f.execCalls, stderr)
			}
			for name, want := range map[string]string{mps.PipeEnv: c.pipe, mps.LogEnv: c.log, "CUDA_VISIBLE_DEVICES": c.cvd} {
				if got := envOf(f.execEnv, name); got != want {
					t.Errorf("%s=%q, want %q", name, got, want)
				}
			}
			w := warnings(stderr)
			if c.warnsAbout == "" && len(w) > 0 || c.warnsAbout != "" && (len(w) != 1 || !strings.Contains(w[0], c.warnsAbout)) {
				t.Errorf("warnings %q, want one about %q", w, c.warnsAbout)
			}
		})
	}
	// --task-prolog exports the same, in the order they are decided.
	f := &fakeOS{allowed: all, job: all}
	code, out, stderr := runWrap(t, f, alice(2), "--root", root, "--task-prolog")
	want := "export CUDA_VISIBLE_DEVICES=" + uuids[2] + "\nexport CUDA_MPS_PIPE_DIRECTORY=" + p.Pipe +
		"\nexport CUDA_MPS_LOG_DIRECTORY=" + p.Log + "\nexport NCCL_IB_HCA==mlx5_2:1\n"
	if code != 0 || out != want {
		t.Errorf("--task-prolog: exit %d, stdout\n%s\nwant\n%s\nstderr %q", code, out, want, stderr)
	}
}

// --explain says for every rank what srunwrap sets for MPS and why, or
// why not; with every GPU visible to every rank (srunwrap.gpu = "keep")
// the per-GPU daemons cannot serve a rank, and it says so.
func TestMPSExplain(t *testing.T) {
	_, all := dgxh100(t)
	uuids := dgxh100UUIDs(t)
	root := descRoot(t, "")
	p := mpsDaemon(t, root, "alice", uuids[2])
	f := &fakeOS{allowed: all, job: all}
	code, out, stderr := runWrap(t, f, alice(0), "--root", root, "--explain")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"rank 2:\n  GPU       CUDA_VISIBLE_DEVICES=2",
		"  sets      CUDA_VISIBLE_DEVICES=" + uuids[2] + "\n",
		"  MPS       CUDA_MPS_PIPE_DIRECTORY=" + p.Pipe + ", CUDA_MPS_LOG_DIRECTORY=" + p.Log +
			": the MPS daemon gpuprep-prolog started for alice on GPU " + uuids[2] +
			"; CUDA_VISIBLE_DEVICES=" + uuids[2] + " by UUID (MPS clients number GPUs from the daemon's)\n",
		"  MPS       no MPS daemon for you on GPU " + uuids[3] + ": the job did not ask for MPS, or another user's daemon serves it\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("--explain lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runWrap(t, f, append(alice(0), "CUDA_MPS_PIPE_DIRECTORY=/home/alice/mps"), "--root", root, "--explain", "--json")
	var x explanation
	if err := json.Unmarshal([]byte(out), &x); code != 0 || err != nil || len(x.Ranks) != 8 {
		t.Fatalf("exit %d, %v: %s", code, err, out)
	}
	for _, r := range x.Ranks {
		if len(r.MPS.Set) != 0 || r.MPS.Why != "kept your CUDA_MPS_PIPE_DIRECTORY=/home/alice/mps: srunwrap sets no MPS variable over yours" {
			t.Errorf("rank %d: MPS %+v", r.LocalID, r.MPS)
		}
	}

	keep := descRoot(t, "[srunwrap]\ngpu = \"keep\"\n")
	mpsDaemon(t, keep, "alice", uuids[2])
	_, out, _ = runWrap(t, f, alice(0), "--root", keep, "--explain")
	want := "  MPS       no MPS: the rank sees 8 GPUs and your MPS daemons serve one GPU each (" + uuids[2] + "); a client of one would see only its GPU."
	if strings.Count(out, want) != 8 {
		t.Errorf("--explain with srunwrap.gpu = keep: want 8 times %q:\n%s", want, out)
	}
	// A daemon of the whole set (gpuprep-prolog makes none today) serves
	// such a rank, with CUDA_VISIBLE_DEVICES by UUID.
	set := mpsDaemon(t, keep, "alice", uuids...)
	fk := &fakeOS{allowed: all, job: all}
	runWrap(t, fk, alice(5), "--root", keep, "--", "python")
	if envOf(fk.execEnv, mps.PipeEnv) != set.Pipe || envOf(fk.execEnv, "CUDA_VISIBLE_DEVICES") != strings.Join(uuids, ",") {
		t.Errorf("whole-set daemon: %s=%q, CUDA_VISIBLE_DEVICES=%q", mps.PipeEnv, envOf(fk.execEnv, mps.PipeEnv), envOf(fk.execEnv, "CUDA_VISIBLE_DEVICES"))
	}
}
