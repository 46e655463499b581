// Package vmnode boots gpuprep's test node, a qemu VM of Debian 12 with
// systemd as PID 1, cgroup v2, munge and Debian's Slurm 22.05 (slurmctld and
// slurmd on the VM, node "gpunode", partition "debug"), two sockets and two
// NUMA nodes, and drives it over SSH. The image is built by
// test/vm/build-image.sh and cached (default /var/cache/gpuprep-vm); the VM's
// hardware is defined in test/vm/vm.sh. Each VM boots from a throwaway qcow2
// overlay, so the cached image is never changed and every boot is a fresh node.
//
// Under TCG (no KVM) a boot takes one to two minutes and every command in the
// VM is several times slower than on the host: tests share one VM (see
// test/vmtest) and keep what runs in it small. Commands reuse one SSH
// connection (a fresh login costs seconds of emulated CPU).
//
//	img, err := vmnode.Build(ctx)                // or finds it cached
//	vm, err := vmnode.Boot(ctx, img, vmnode.Options{})
//	defer vm.Close()
//	err = vm.InstallGpuprep(ctx, repoDir)        // make install, copied in
//	err = vm.WriteConfig(ctx, "[general]\ngpu_backend = \"none\"\n")
//	id, err := vm.SbatchSleep(ctx, "alice", 300) // a job that sleeps
//	_, err = vm.WaitJobState(ctx, id, "RUNNING")
//	cg, err := vm.JobCgroup(ctx, id)             // /sys/fs/cgroup/system.slice/gpunode_slurmstepd.scope/job_N
//	out, _, err := vm.Run(ctx, "cat "+vmnode.Quote(cg+"/cpuset.cpus.effective"))
//
// Facts of the image (Debian 12, Slurm 22.05.8, systemd 252), checked:
//   - slurmd's cgroup/v2 plugin asks systemd over D-Bus for its scope, which
//     Debian's build (multiple-slurmd support) names <NodeName>_slurmstepd.scope:
//     jobs are /sys/fs/cgroup/system.slice/gpunode_slurmstepd.scope/job_<id>.
//   - slurmd starts when the Prolog= file is missing but fails every job
//     ("prolog: Unable to create list of paths") and drains the node; the image
//     holds placeholder /usr/local/sbin/gpuprep-{prolog,epilog} (exit 0) that
//     InstallGpuprep replaces.
//   - user@.service is masked (a systemd --user per login costs seconds under
//     TCG); logins still get a session scope in user.slice.
//
// Every method takes a context and gives up at its deadline. The qemu process
// is not bound to the context of Boot: it runs until Close (or until the test
// binary dies: it gets SIGKILL then).
package vmnode
