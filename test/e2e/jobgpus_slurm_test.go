package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gpuprep/internal/testroot"
	"gpuprep/test/slurmharness"
)

// gresOrders are gres.conf texts for GPUs with the given minors in PCI
// order, and the minor of each of Slurm's GPU indexes they should give:
// "pci" one line per GPU in bus order (as gpuprep-gres writes it), "range"
// a hand-written File=<dir>/nvidia[0-7], "reversed" the PCI lines
// backwards, "links" the reversed lines with Links= whose -1 sits at each
// GPU's PCI position (Slurm does not reorder by it).
func gresOrders(dir string, pci []int) map[string]struct {
	text  string
	order []int
} {
	line := func(m int, links string) string {
		return fmt.Sprintf("Name=gpu File=%s/nvidia%d%s\n", dir, m, links)
	}
	rev := slices.Clone(pci)
	slices.Reverse(rev)
	var p, r, l strings.Builder
	for _, m := range pci {
		p.WriteString(line(m, ""))
	}
	for _, m := range rev {
		r.WriteString(line(m, ""))
	}
	for i := len(pci) - 1; i >= 0; i-- {
		var ls []string
		for j := range pci {
			v := "18"
			if j == i {
				v = "-1"
			}
			ls = append(ls, v)
		}
		l.WriteString(line(pci[i], " Links="+strings.Join(ls, ",")))
	}
	seq := []int{0, 1, 2, 3, 4, 5, 6, 7}
	return map[string]struct {
		text  string
		order []int
	}{
		"pci":      {"AutoDetect=off\n" + p.String(), pci},
		"range":    {"AutoDetect=off\nName=gpu File=" + dir + "/nvidia[0-7]\n", seq},
		"reversed": {"AutoDetect=off\n" + r.String(), rev},
		"links":    {"AutoDetect=off\n" + l.String(), rev},
	}
}

// TestSlurmJobGPUsAreGresOrder records what Slurm (22.05) puts in the
// prolog's SLURM_JOB_GPUS: for the dgxh100 fixture's minors (PCI order
// 2,3,0,1,6,7,4,5), a job that gets Slurm's GPU k (the k-th free one:
// earlier jobs hold 0..k-1) is confined by the devices cgroup to the k-th
// File= of gres.conf in written order (Links= do not reorder them),
// and the prolog sees SLURM_JOB_GPUS=k, CUDA_VISIBLE_DEVICES=k and
// GPU_DEVICE_ORDINAL=k; the task sees SLURM_STEP_GPUS=k and
// CUDA_VISIBLE_DEVICES=0. So the numbers are positions in gres.conf, not
// device minors and not PCI order. slurmd -G prints Index=<minor>.
func TestSlurmJobGPUsAreGresOrder(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/sys/fs/cgroup/devices/devices.list"); err != nil {
		t.Skip("no cgroup v1 devices controller here (cgroup v2 needs systemd/dbus for Slurm 22.05)")
	}
	var pci []int
	for _, d := range testroot.GPUs(t, newHookNode(t).root) {
		pci = append(pci, d.Minor)
	}
	if !slices.Equal(pci, []int{2, 3, 0, 1, 6, 7, 4, 5}) {
		t.Fatalf("dgxh100 fixture minors in PCI order: %v", pci)
	}
	devDir := t.TempDir()
	devs := slurmharness.MakeDevices(t, devDir, []int{0, 1, 2, 3, 4, 5, 6, 7})
	// The fake devices have no driver: opening an allowed one fails with
	// ENXIO, a denied one with EPERM.
	probe := `echo "$SLURM_JOB_ID|$CUDA_VISIBLE_DEVICES|$SLURM_STEP_GPUS|$(for d in ` + strings.Join(devs, " ") +
		`; do cat "$d" 2>&1 | grep -q "No such device" && echo -n "${d##*/}"; done)"`
	for name, c := range gresOrders(devDir, pci) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			logf := filepath.Join(t.TempDir(), "prolog.log")
			cl := slurmharness.Start(t, slurmharness.Options{
				Gres: "gpu:8", GresConf: c.text,
				TaskPlugin: "task/cgroup,task/affinity",
				ExtraConf:  []string{"ProctrackType=proctrack/cgroup"},
				CgroupConf: "CgroupPlugin=cgroup/v1\nConstrainCores=yes\nConstrainDevices=yes\n",
				Files:      map[string]string{"prolog.sh": "#!/bin/sh\necho \"$SLURM_JOB_ID|$SLURM_JOB_GPUS|$CUDA_VISIBLE_DEVICES|$GPU_DEVICE_ORDINAL\" >> " + logf + "\n"},
				Prolog:     "prolog.sh",
			})
			if out, err := cl.SlurmdG(); err != nil || strings.Count(out, "Index=") != max(1, len(strings.Split(strings.TrimSpace(c.text), "\n"))-1) {
				t.Errorf("slurmd -G: %v\n%s", err, out)
			}
			for k := 0; k < 8; k++ {
				stop := filepath.Join(t.TempDir(), "stop")
				hold := 0
				if k > 0 {
					hold = cl.Sbatch("while [ ! -e "+stop+" ]; do sleep 0.1; done\n", "--gres=gpu:"+strconv.Itoa(k), "-n1")
					waitRunning(t, cl, hold)
				}
				f := strings.Split(strings.TrimSpace(cl.MustSrun("--gres=gpu:1", "-n1", "sh", "-c", probe)), "|")
				ks := strconv.Itoa(k)
				if len(f) != 4 || f[1] != "0" || f[2] != ks || f[3] != "nvidia"+strconv.Itoa(c.order[k]) {
					t.Errorf("Slurm's GPU %d: task sees job|CUDA_VISIBLE_DEVICES|SLURM_STEP_GPUS|allowed device = %q, want CUDA_VISIBLE_DEVICES=0 SLURM_STEP_GPUS=%d nvidia%d", k, f, k, c.order[k])
				}
				if hold > 0 {
					if err := os.WriteFile(stop, nil, 0o644); err != nil {
						t.Fatal(err)
					}
					cl.WaitJob(hold, 30*time.Second)
				}
				if len(f) == 4 {
					if got := prologLine(t, logf, f[0]); got != ks+"|"+ks+"|"+ks {
						t.Errorf("Slurm's GPU %d: prolog saw SLURM_JOB_GPUS|CUDA_VISIBLE_DEVICES|GPU_DEVICE_ORDINAL = %q, want %s|%s|%s", k, got, ks, ks, ks)
					}
				}
			}
		})
	}
}

// waitRunning waits up to 20 s for a job to run.
func waitRunning(t *testing.T, c *slurmharness.Cluster, id int) {
	t.Helper()
	for d := time.Now().Add(20 * time.Second); time.Now().Before(d); time.Sleep(50 * time.Millisecond) {
		if m, _ := c.Job(id); strings.HasPrefix(m["JobState"], "RUNNING") {
			return
		}
	}
	t.Fatalf("job %d not running after 20 s\n%s", id, c.LogTails(20))
}

// prologLine is what the logging prolog wrote for job id (without the id).
func prologLine(t *testing.T, logf, id string) string {
	t.Helper()
	b, _ := os.ReadFile(logf)
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, id+"|"); ok {
			return rest
		}
	}
	return "(no prolog line for job " + id + ")"
}

// TestHooksTuneTheJobsGPUsInSlurm: gpuprep's prolog under Slurm, on the
// dgxh100 fixture (minors out of PCI order) with the mock GPUs, changes
// exactly the GPUs Slurm gave the job, for gres.conf in PCI order, in minor
// order (File=/dev/nvidia[0-7]) and reversed: a job holding Slurm's GPUs
// 0-2, then a second one getting 3-4, change the GPUs of the first three,
// then five, File= entries; after both, the node is back at its baseline.
func TestHooksTuneTheJobsGPUsInSlurm(t *testing.T) {
	t.Parallel()
	devDir := t.TempDir()
	slurmharness.MakeDevices(t, devDir, []int{0, 1, 2, 3, 4, 5, 6, 7})
	pci := []int{2, 3, 0, 1, 6, 7, 4, 5}
	orders := gresOrders(devDir, pci)
	for _, name := range []string{"pci", "range", "reversed"} {
		c := orders[name]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			n := newHookNode(t)
			n.writeGresConf(c.text)
			uuidOf := map[int]string{}
			for _, d := range testroot.GPUs(t, n.root) {
				uuidOf[d.Minor] = d.UUID
			}
			// A warm cycle over every GPU so the mock GPUs' saved
			// settings are in the baseline.
			n.must("prolog", 1, "0,1,2,3,4,5,6,7", "")
			n.must("epilog", 1, "", "")
			base := n.snap()
			args := " --root " + n.root + " --gpu-backend mock:dgxh100 --config " + n.cfg + " --state-dir " + n.spool + ` "$@"`
			cl := slurmharness.Start(t, slurmharness.Options{
				Gres: "gpu:8", GresConf: c.text,
				Files: map[string]string{
					"prolog.sh": "#!/bin/sh\nexec " + bin(t, "gpuprep-prolog") + args + "\n",
					"epilog.sh": "#!/bin/sh\nexec " + bin(t, "gpuprep-epilog") + args + "\n",
				},
				Prolog: "prolog.sh",
				Epilog: "epilog.sh",
			})
			changed := func() []string {
				var s []string
				for _, d := range n.snap().Diff(base, 1000) {
					if rest, ok := strings.CutPrefix(d, "run/gpuprep-mock/"); ok {
						if u, _, ok := strings.Cut(rest, ".json"); ok && !slices.Contains(s, u) {
							s = append(s, u)
						}
					}
				}
				slices.Sort(s)
				return s
			}
			stop := filepath.Join(t.TempDir(), "stop")
			var jobs []int
			for _, step := range []struct{ gpus, upto int }{{3, 3}, {2, 5}} {
				id := cl.Sbatch("while [ ! -e "+stop+" ]; do sleep 0.1; done\n", "--gres=gpu:"+strconv.Itoa(step.gpus), "-n1")
				jobs = append(jobs, id)
				waitRunning(t, cl, id)
				var want []string
				for _, m := range c.order[:step.upto] {
					want = append(want, uuidOf[m])
				}
				slices.Sort(want)
				// The prolog may still be running when the job shows RUNNING.
				got := changed()
				for d := time.Now().Add(20 * time.Second); !slices.Equal(got, want) && time.Now().Before(d); got = changed() {
					time.Sleep(100 * time.Millisecond)
				}
				if !slices.Equal(got, want) {
					t.Errorf("with Slurm's GPUs 0-%d allocated: GPUs changed %v, want those of /dev/nvidia%v: %v", step.upto-1, got, c.order[:step.upto], want)
				}
			}
			if err := os.WriteFile(stop, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, id := range jobs {
				cl.WaitJob(id, 30*time.Second)
			}
			waitBaseline(t, n, base, "after the jobs")
		})
	}
}
