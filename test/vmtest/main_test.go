// Package vmtest runs gpuprep on a real Slurm GPU node as sites run it:
// a qemu VM (test/vm, test/vmnode) with systemd as PID 1, cgroup v2 and
// Debian's slurmd using proctrack/cgroup and task/cgroup, where jobs get
// system.slice/gpunode_slurmstepd.scope/job_<id> (by SLUID on Slurm 26.05,
// GPUPREP_VM_RELEASE=sid). TestMain builds the image
// (or finds it cached), boots ONE VM for the whole package (a boot costs a
// minute or two under TCG), installs gpuprep in it with `make install` and
// writes BaseConfig. Without a VM (not root, no qemu, a failed build or
// boot) the tests skip with the reason, and with CI=true the package fails.
// -short skips them all.
//
// A new scenario is a test that takes the shared VM with Node(t), leaves it
// as it found it (StartSleepJob cancels its job at the end, SetConfig puts
// BaseConfig back) and drives it with the VM's methods:
//
//	vm := Node(t)
//	ctx := Ctx(t, 3*time.Minute)
//	SetConfig(t, BaseConfig+"[isolation]\n...")
//	id := StartSleepJob(t, ctx, "alice", 300, "-c1")
//	cg := MustJobCgroup(t, ctx, id)
//	got := MustRead(t, ctx, cg+"/cpuset.cpus.effective")
package vmtest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"testing"
	"time"

	"gpuprep/test/vmnode"
)

// BaseConfig is the gpuprep.toml the VM runs with: no GPUs, no metrics.
const BaseConfig = `[general]
gpu_backend = "none"
metrics_dir = ""
`

var (
	node    *vmnode.VM
	noNode  error // why there is no VM
	repoDir string
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	start := time.Now()
	if testing.Short() {
		noNode = errors.New("-short: no VM")
		return m.Run()
	}
	ci := os.Getenv("CI") == "true"
	node, noNode = setUp()
	if noNode != nil {
		if ci {
			fmt.Fprintf(os.Stderr, "vmtest: %v\nvmtest: CI=true makes a missing test node a failure\n", noNode)
			return 1
		}
		fmt.Fprintf(os.Stderr, "vmtest: no test node, tests skip: %v\n", noNode)
		return m.Run()
	}
	code := m.Run()
	t0 := time.Now()
	if err := node.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "vmtest: %v\n", err)
	}
	fmt.Printf("vmtest: timing: boot to SSH %v, to node idle %v; close %v; package %v\n",
		node.BootToSSH.Round(time.Second), node.BootToReady.Round(time.Second),
		time.Since(t0).Round(time.Second), time.Since(start).Round(time.Second))
	return code
}

// setUp builds (or finds) the image, boots the VM and installs gpuprep.
func setUp() (*vmnode.VM, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("needs root (the image is built as root and its SSH key is root's)")
	}
	var err error
	if repoDir, err = vmnode.RepoRoot(); err != nil {
		return nil, err
	}
	if _, err := exec.LookPath("make"); err != nil {
		return nil, fmt.Errorf("needs make to install gpuprep: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()

	t0 := time.Now()
	img, err := vmnode.Build(ctx)
	if err != nil {
		return nil, err
	}
	fmt.Printf("vmtest: image %s (slurm %s, kernel %s) ready in %v\n", img.Dir, img.Info["SLURM_VERSION"], img.Info["KERNEL_VERSION"], time.Since(t0).Round(time.Millisecond))

	bootCtx, cancelBoot := context.WithTimeout(ctx, 10*time.Minute)
	defer cancelBoot()
	log := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelInfo}))
	vm, err := vmnode.Boot(bootCtx, img, vmnode.Options{Logger: log})
	if err != nil {
		return nil, err
	}
	fmt.Printf("vmtest: timing: boot to SSH %v, to node idle %v\n", vm.BootToSSH.Round(time.Second), vm.BootToReady.Round(time.Second))

	t0 = time.Now()
	instCtx, cancelInst := context.WithTimeout(ctx, 5*time.Minute)
	defer cancelInst()
	if err := vm.InstallGpuprep(instCtx, repoDir); err != nil {
		vm.Close()
		return nil, err
	}
	if err := vm.WriteConfig(instCtx, BaseConfig); err != nil {
		vm.Close()
		return nil, err
	}
	fmt.Printf("vmtest: timing: gpuprep installed in %v\n", time.Since(t0).Round(time.Millisecond))
	return vm, nil
}
