// Package slurmharness runs a real one-node Slurm (Debian's slurm-wlm 22.05
// and munge) on localhost for end-to-end tests: Start makes a fresh folder
// (state, spool, logs, munge key and socket), starts a private munged,
// slurmctld and slurmd on free ports, waits for the node to be idle, and
// registers a cleanup that cancels jobs and stops every daemon by PID (then
// kills any leftover step or task of that cluster; a watchdog does the same
// if the test binary dies without cleanups), so nothing outlives the test and
// clusters of parallel tests never collide. It needs root; as root a missing
// Slurm is installed (EnsureInstalled); as non-root the test is skipped, or
// fails when CI=true. Adding a scenario is a test in test/e2e that starts its
// own cluster with the Options it needs and drives it with Srun, Sbatch,
// WaitJob and NodeState, e.g. a prolog that fails:
//
//	devs := slurmharness.MakeDevices(t, t.TempDir(), []int{0, 1})
//	c := slurmharness.Start(t, slurmharness.Options{
//		Gres:      "gpu:2",
//		GresConf:  "Name=gpu File=" + devs[0] + "\nName=gpu File=" + devs[1] + "\n",
//		Prolog:    "/path/to/bin/gpuprep-prolog",                  // or a script in Options.Files
//		PrologEnv: []string{"GPUPREP_ROOT=" + fixtureRoot}, // via a wrapper: slurmd gives hooks no PATH
//	})
//	if _, stderr, err := c.Srun("-n1", "true"); err == nil {
//		t.Fatalf("job ran on a broken node: %s", stderr)
//	}
//	if st, reason := c.NodeState(); st != "drained" || !strings.Contains(c.SlurmdLog(), "GPU 3") {
//		t.Fatalf("node %s (%s), want drained; %s", st, reason, c.LogTails(20))
//	}
//	c.Resume()
//
// Jobs are tiny (the development machines have 2 cores); a batch job whose
// prolog fails comes back from WaitJob as PENDING (requeued and held), and
// Release makes it run again at once.
//
// The node line is the one `slurmd -C` prints (NodeName forced to the short
// host name, NodeAddr=127.0.0.1); Options can change single fields (Sockets,
// CoresPerSocket, ThreadsPerCore, RealMemory, Gres, NodeFields) or replace it
// with a generated line (NodeLine, e.g. gpuprep-gres --format slurm for a
// simulated 8-GPU 224-CPU node). Verified on 22.05.8: a node line that claims
// more sockets/cores/threads/CPUs/memory than `slurmd -C` sees registers as
// INVALID_REG+DRAIN ("Low socket*core*thread count, Low CPUs, Low
// RealMemory"), and `slurmd -G` rejects gres.conf Cores= beyond the real
// cores ("xcpuinfo_abs_to_mac: failed"); with SlurmdParameters=config_overrides
// both are accepted and jobs run (task/affinity silently drops CPUs that do
// not exist). The harness therefore adds config_overrides by itself whenever
// the node line differs from the detected hardware (Options.ConfigOverrides
// turns that off or forces it). Every gres.conf File= must exist (MakeDevices,
// MakeCapDevices make character devices with mknod): `slurmd -G` waits about
// 19 s for a missing one and then dies. A typed gres.conf (Type=h100) needs a
// typed node Gres (gpu:h100:4); with an untyped Gres=gpu:4 slurmd warns
// "has 1 more configured than expected" per line and drops the type.
package slurmharness
