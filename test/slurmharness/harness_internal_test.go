package slurmharness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const detected = "NodeName=vm CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=24105"

func TestBuildNodeLine(t *testing.T) {
	for _, tc := range []struct {
		name      string
		o         Options
		want      string
		overrides bool
	}{
		{"detected", Options{},
			"NodeName=host NodeAddr=127.0.0.1 CPUs=2 Sockets=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=24105 State=UNKNOWN", false},
		{"gres and fields", Options{Gres: "gpu:4", NodeFields: []string{"Features=a,b", "RealMemory=1000"}},
			"NodeName=host NodeAddr=127.0.0.1 CPUs=2 Sockets=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=1000 Gres=gpu:4 Features=a,b State=UNKNOWN", false},
		{"more cores", Options{Sockets: 2, CoresPerSocket: 4, ThreadsPerCore: 2},
			"NodeName=host NodeAddr=127.0.0.1 CPUs=16 Sockets=2 CoresPerSocket=4 ThreadsPerCore=2 RealMemory=24105 State=UNKNOWN", true},
		{"more memory", Options{RealMemory: 100000},
			"NodeName=host NodeAddr=127.0.0.1 CPUs=2 Sockets=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=100000 State=UNKNOWN", true},
		{"generated", Options{NodeLine: "NodeName=gpu01 CPUs=224 Sockets=2 CoresPerSocket=56 ThreadsPerCore=2 RealMemory=2000000 Gres=gpu:h100:8"},
			"NodeName=host NodeAddr=127.0.0.1 CPUs=224 Sockets=2 CoresPerSocket=56 ThreadsPerCore=2 RealMemory=2000000 Gres=gpu:h100:8 State=UNKNOWN", true},
		{"generated same shape", Options{NodeLine: "NodeName=x SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 Gres=gpu:2 State=IDLE"},
			"NodeName=host NodeAddr=127.0.0.1 CoresPerSocket=2 ThreadsPerCore=1 Gres=gpu:2 State=IDLE Sockets=1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ov, err := buildNodeLine("host", detected, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || ov != tc.overrides {
				t.Errorf("got  %s (overrides %v)\nwant %s (overrides %v)", got, ov, tc.want, tc.overrides)
			}
		})
	}
	if _, _, err := buildNodeLine("host", detected, Options{NodeLine: "CPUs=4"}); err == nil {
		t.Error("NodeLine without NodeName= accepted")
	}
	if _, _, err := buildNodeLine("host", detected, Options{NodeFields: []string{"oops"}}); err == nil {
		t.Error("NodeFields entry without = accepted")
	}
}

func TestSlurmConfExtra(t *testing.T) {
	c := &Cluster{Dir: "/d", Node: "host", Partition: "debug", MungeSocket: "/d/munge/munge.sock", CtldPort: 1, SlurmdPort: 2}
	conf := c.slurmConf("NodeName=host", true, Options{
		SlurmdParameters: []string{"numa_node_as_socket"},
		ExtraConf:        []string{"TaskPlugin=task/none", "schedulerparameters=foo", "PartitionName=b Nodes=ALL", "TaskProlog=/x", "SlurmdParameters=l3cache_as_socket"},
		Prolog:           "/p",
	})
	for _, want := range []string{
		"\nTaskPlugin=task/none\n", "\nSchedulerParameters=foo\n", "\nPartitionName=b Nodes=ALL\n",
		"\nTaskProlog=/x\n", "\nProlog=/p\n", "\nPrologFlags=Alloc,Contain\n",
		"\nSlurmdParameters=config_overrides,numa_node_as_socket,l3cache_as_socket\n",
		"\nSlurmctldHost=host(127.0.0.1)\n", "\nAuthInfo=socket=/d/munge/munge.sock\n",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("slurm.conf lacks %q:\n%s", want, conf)
		}
	}
	if strings.Count(conf, "TaskPlugin=") != 1 || strings.Count(strings.ToLower(conf), "schedulerparameters=") != 1 {
		t.Errorf("duplicate keys:\n%s", conf)
	}
	if !strings.HasSuffix(conf, "NodeName=host\nPartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n") {
		t.Errorf("node/partition lines not last:\n%s", conf)
	}
}

func TestParseSlurmdG(t *testing.T) {
	out := `slurmd: WARNING: A line in gres.conf for GRES gpu:h100 has 1 more configured than expected in slurm.conf. Ignoring extra GRES.
slurmd: Gres Name=gpu Type=(null) Count=1 Index=0 ID=7696487 File=/tmp/d/nvidia0 Cores=0 CoreCnt=2 Links=-1,4,4,4
slurmd: Gres Name=gpu Type=h100 Count=4 Index=0 ID=7696487 File=/tmp/d/nvidia[4-7] Cores=56-111 CoreCnt=224 (null)
slurmd: Gres Name=gpu Type=1g.10gb Count=1 Index=22 ID=7696487 File=/d/nvidia0,/d/nvidia-caps/nvidia-cap21,/d/nvidia-caps/nvidia-cap22 Cores=0-55 CoreCnt=224 (null)
`
	gs, err := ParseSlurmdG(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 3 {
		t.Fatalf("%d lines: %+v", len(gs), gs)
	}
	if g := gs[0]; g.Type != "" || g.Count != 1 || g.File != "/tmp/d/nvidia0" || g.Cores != "0" || g.CoreCnt != 2 || g.Links != "-1,4,4,4" {
		t.Errorf("line 0: %+v", g)
	}
	if g := gs[1]; g.Type != "h100" || g.Count != 4 || g.Links != "" || g.Cores != "56-111" {
		t.Errorf("line 1: %+v", g)
	}
	if g := gs[2]; g.Index != 22 || !strings.HasSuffix(g.File, "nvidia-cap22") {
		t.Errorf("line 2: %+v", g)
	}
	if _, err := ParseSlurmdG("slurmd: Gres Name=gpu Count=x"); err == nil {
		t.Error("bad Count accepted")
	}
}

func TestParseRecord(t *testing.T) {
	m := parseRecord("JobId=3 JobName=job-1.sh UserId=root(0) JobState=PENDING Reason=launch_failed_requeued_held Dependency=(null) Command=/d/jobs/job 1.sh WorkDir=/d\n")
	if m["JobState"] != "PENDING" || m["Reason"] != "launch_failed_requeued_held" || m["Command"] != "/d/jobs/job 1.sh" || m["WorkDir"] != "/d" || m["UserId"] != "root(0)" {
		t.Errorf("%v", m)
	}
}

func TestCleanEnv(t *testing.T) {
	env := cleanEnv([]string{"HOME=/root", "PATH=/usr/local/go/bin", "SLURM_JOB_ID=7", "SBATCH_PARTITION=x", "SLURMD_NODENAME=n"}, "/d/slurm.conf")
	got := strings.Join(env, " ")
	if strings.Contains(got, "SLURM_JOB_ID") || strings.Contains(got, "SBATCH_") || strings.Contains(got, "SLURMD_NODENAME") {
		t.Errorf("outer Slurm variables kept: %s", got)
	}
	if !strings.Contains(got, "SLURM_CONF=/d/slurm.conf") || !strings.Contains(got, "PATH=/usr/local/go/bin:/usr/local/sbin:") || !strings.Contains(got, "HOME=/root") {
		t.Errorf("env: %s", got)
	}
}

func TestShellQuote(t *testing.T) {
	if got := shellQuote(`it's $x`); got != `'it'\''s $x'` {
		t.Errorf("%s", got)
	}
}

// TestAptInstall runs the install path (apt-get update, then a simulated
// apt-get install -s, so nothing on this machine changes) with policy-rc.d
// at a temporary path. It needs root and the network: SLURMHARNESS_TEST_APT=1.
func TestAptInstall(t *testing.T) {
	if os.Getenv("SLURMHARNESS_TEST_APT") != "1" || os.Geteuid() != 0 {
		t.Skip("set SLURMHARNESS_TEST_APT=1 and run as root")
	}
	policy := filepath.Join(t.TempDir(), "policy-rc.d")
	if err := aptInstall(context.Background(), policy, []string{"-s"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(policy); err == nil {
		t.Error("policy-rc.d left behind")
	}
	// A failing install reports apt's output.
	err := aptInstall(context.Background(), policy, []string{"-s", "no-such-package-gpuprep"})
	if err == nil || !strings.Contains(err.Error(), "no-such-package-gpuprep") {
		t.Errorf("err = %v", err)
	}
}

// An install disables at boot the daemons it brought (Debian's postinst
// enables them): systemctl disable where there is systemctl, else
// update-rc.d.
func TestDisableAtBoot(t *testing.T) {
	var got []string
	run := func(_ context.Context, name string, args ...string) error {
		got = append(got, name+" "+strings.Join(args, " "))
		return nil
	}
	disableAtBoot(context.Background(), nil, run)
	if len(got) != 0 {
		t.Errorf("nothing to disable: %q", got)
	}
	disableAtBoot(context.Background(), []string{"slurmctld", "munge"}, run)
	_, errSystemctl := lookPath("systemctl")
	_, errRC := lookPath("update-rc.d")
	var want []string
	switch {
	case errSystemctl == nil:
		want = []string{"systemctl disable --quiet slurmctld munge"}
	case errRC == nil:
		want = []string{"update-rc.d slurmctld disable", "update-rc.d munge disable"}
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("ran %q, want %q", got, want)
	}
}
