package slurm

import "testing"

// Output of scontrol show node on Slurm 22.05 (Debian 12) for a drained
// node, trimmed to the lines that matter and the shape around them.
const showDrained = `NodeName=gpu01 Arch=x86_64 CoresPerSocket=1
   CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=0.05
   AvailableFeatures=(null)
   State=IDLE+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A
   Partitions=debug
   BootTime=2026-12-02T09:00:00 SlurmdStartTime=2026-12-02T09:01:00
   Reason=gpuprep: xid: GPU 0 (0000:18:00.0): Xid 79 [root@2026-12-02T10:00:00]
`

func TestParseShowNode(t *testing.T) {
	cases := []struct {
		name, out       string
		state, reason   string
		by              string
		drained, errors bool
	}{
		{"drained by gpuprep", showDrained, "IDLE+DRAIN", "gpuprep: xid: GPU 0 (0000:18:00.0): Xid 79", "root", true, false},
		{"idle, no reason", "NodeName=n1 Arch=x86_64\n   State=IDLE ThreadsPerCore=1\n", "IDLE", "", "", false, false},
		{"mixed draining, reason with brackets", "NodeName=n1\n   State=MIXED+DRAIN+NOT_RESPONDING Weight=1\n   Reason=disk [sda] bad [admin@2026-01-01T00:00:00]\n", "MIXED+DRAIN+NOT_RESPONDING", "disk [sda] bad", "admin", true, false},
		{"reason without a tag", "NodeName=n1\n   State=DOWN\n   Reason=Not responding\n", "DOWN", "Not responding", "", false, false},
		{"garbage", "slurm_load_node error: Invalid node name specified\n", "", "", "", false, true},
	}
	for _, c := range cases {
		n, err := ParseShowNode(c.out)
		if (err != nil) != c.errors {
			t.Errorf("%s: err %v", c.name, err)
			continue
		}
		if c.errors {
			continue
		}
		if n.State != c.state || n.Reason != c.reason || n.ReasonBy != c.by || n.Drained() != c.drained {
			t.Errorf("%s: got %+v drained=%v", c.name, n, n.Drained())
		}
	}
}
