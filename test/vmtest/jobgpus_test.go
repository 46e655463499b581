package vmtest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"gpuprep/test/vmnode"
)

// fakeGPUs gives the VM's slurmd four GPUs that exist only as device files
// (/dev/nvidia0-3, char 195:N, no driver: opening one Slurm allows fails
// with ENXIO, one it denies with EPERM), listed in gres.conf in the order
// 2,3,0,1, and a Prolog glob that runs an environment recorder before
// gpuprep's prolog. slurm.conf, gres.conf and the devices are put back at
// the end of the test.
const fakeGPUs = `set -e
for n in 0 1 2 3; do [ -e /dev/nvidia$n ] || mknod -m 0666 /dev/nvidia$n c 195 $n; done
printf 'AutoDetect=off\nName=gpu File=/dev/nvidia2\nName=gpu File=/dev/nvidia3\nName=gpu File=/dev/nvidia0\nName=gpu File=/dev/nvidia1\n' >/etc/slurm/gres.conf
cp /etc/slurm/slurm.conf /etc/slurm/slurm.conf.vmtest
sed -i -e '1i GresTypes=gpu' -e '/^NodeName=gpunode /s/$/ Gres=gpu:4/' -e 's|^Prolog=.*|Prolog=/etc/slurm/prolog.d/*|' /etc/slurm/slurm.conf
mkdir -p /etc/slurm/prolog.d
printf '#!/bin/sh\necho "$SLURM_JOB_ID|$SLURM_JOB_GPUS|$CUDA_VISIBLE_DEVICES|$GPU_DEVICE_ORDINAL" >>/run/vmtest-prolog-env\n' >/etc/slurm/prolog.d/10-env
chmod 0755 /etc/slurm/prolog.d/10-env
ln -sf /usr/local/sbin/gpuprep-prolog /etc/slurm/prolog.d/50-gpuprep
rm -f /run/vmtest-prolog-env
systemctl restart slurmctld slurmd
`

const noFakeGPUs = `mv /etc/slurm/slurm.conf.vmtest /etc/slurm/slurm.conf
rm -rf /etc/slurm/gres.conf /etc/slurm/prolog.d /run/vmtest-prolog-env /dev/nvidia0 /dev/nvidia1 /dev/nvidia2 /dev/nvidia3
systemctl restart slurmctld slurmd
`

// gresOrder is fakeGPUs' gres.conf order: Slurm's GPU k is /dev/nvidia<gresOrder[k]>.
var gresOrder = []int{2, 3, 0, 1}

// TestJobGPUsAreGresOrder: what this release's Slurm puts in a prolog's
// SLURM_JOB_GPUS, CUDA_VISIBLE_DEVICES and GPU_DEVICE_ORDINAL, on a cgroup
// v2 node where task/cgroup confines devices (eBPF): for the job that
// gets Slurm's GPU k (earlier jobs hold 0..k-1), all three are k, the
// position of the GPU's File= in gres.conf (not its minor), and the job's
// task may open that device and no other, seeing CUDA_VISIBLE_DEVICES=0
// and SLURM_STEP_GPUS=k. gpuprep's prolog maps SLURM_JOB_GPUS to GPUs this
// way (lib/hook/jobgpus.go), measured first on Slurm 22.05 with cgroup v1
// (test/e2e TestSlurmJobGPUsAreGresOrder).
func TestJobGPUsAreGresOrder(t *testing.T) {
	vm := Node(t)
	ctx := Ctx(t, 10*time.Minute)
	if _, _, err := vm.Run(ctx, fakeGPUs); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if _, _, err := vm.Run(ctx, noFakeGPUs); err != nil {
			t.Errorf("putting slurm.conf back: %v", err)
		}
		if _, _, err := vm.WaitNodeState(ctx, "idle"); err != nil {
			t.Errorf("node after putting slurm.conf back: %v", err)
		}
	})
	if _, _, err := vm.WaitNodeState(ctx, "idle"); err != nil {
		t.Fatal(err)
	}
	if g := MustRun(t, ctx, "scontrol show node "+vmnode.NodeName+" | grep -o 'Gres=[^ ]*'"); !strings.Contains(g, "gpu:4") {
		t.Fatalf("slurmd does not offer the four GPUs: %q", g)
	}

	// The task prints its job, CUDA_VISIBLE_DEVICES, SLURM_STEP_GPUS and
	// the devices it may open.
	const probe = `echo "$SLURM_JOB_ID|$CUDA_VISIBLE_DEVICES|$SLURM_STEP_GPUS|$(for d in /dev/nvidia0 /dev/nvidia1 /dev/nvidia2 /dev/nvidia3; do cat $d 2>&1 | grep -q 'No such device' && printf %s ${d##*/}; done)"`
	for k := range gresOrder {
		var hold int
		if k > 0 {
			hold = StartSleepJob(t, ctx, "alice", 300, "-c1", "--gres=gpu:"+strconv.Itoa(k))
		}
		out, stderr, err := vm.Srun(ctx, "alice", "--gres=gpu:1", "-n1", "sh", "-c", probe)
		if err != nil {
			t.Fatalf("srun for Slurm's GPU %d: %v: %s", k, err, stderr)
		}
		f := strings.Split(strings.TrimSpace(out), "|")
		ks := strconv.Itoa(k)
		if len(f) != 4 || f[1] != "0" || f[2] != ks || f[3] != "nvidia"+strconv.Itoa(gresOrder[k]) {
			t.Errorf("Slurm's GPU %d: task sees job|CUDA_VISIBLE_DEVICES|SLURM_STEP_GPUS|allowed device = %q, want CUDA_VISIBLE_DEVICES=0 SLURM_STEP_GPUS=%d nvidia%d", k, f, k, gresOrder[k])
		}
		if len(f) == 4 {
			env := MustRun(t, ctx, "grep '^"+f[0]+"|' /run/vmtest-prolog-env || true")
			if want := f[0] + "|" + ks + "|" + ks + "|" + ks; strings.TrimSpace(env) != want {
				t.Errorf("Slurm's GPU %d: prolog saw job|SLURM_JOB_GPUS|CUDA_VISIBLE_DEVICES|GPU_DEVICE_ORDINAL = %q, want %s", k, strings.TrimSpace(env), want)
			}
		}
		if hold > 0 {
			if err := vm.Cancel(ctx, hold); err != nil {
				t.Fatal(err)
			}
			if _, err := vm.WaitJobEnd(ctx, hold); err != nil {
				t.Fatal(err)
			}
		}
	}
}
