package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gpuprep/internal/testroot"
)

// TestDemoOnEverySimulatedNode runs make demo's script, as README.md
// advertises it, on each simulated node it accepts: it must end with exit
// 0, no step may fail, and the steps a reader relies on must show what
// they say (the forged Xid lines ignored, the driver's Xid failing the
// prolog once, the dead job released, the epilog restoring).
func TestDemoOnEverySimulatedNode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole demo three times")
	}
	root, err := testroot.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(bin(t, "gpuprep-prolog"))
	for _, node := range []string{"dgxh100", "dgxa100", "dgxb200"} {
		t.Run(node, func(t *testing.T) {
			cmd := exec.Command("bash", "examples/demo.sh")
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "BIN="+dir, "DEMO_NODE="+node, "NO_COLOR=1")
			out, err := cmd.CombinedOutput()
			text := string(out)
			if err != nil || strings.Contains(text, "demo: failed") {
				t.Fatalf("DEMO_NODE=%s: %v\n%s", node, err, text)
			}
			for _, want := range []string{
				"matches the hardware",
				"forged Xid lines",
				"gpuprep-prolog: health: XID79 reboot: GPU 0 (",
				"Xid 79",
				"action: reboot",
				"would release job 4243",
				"epilog done",
				"gpuprep_drift_events_total",
				"IRQs placed, listed in /run/gpuprep/irq-placed",
				"knob=irq_affinity@node kind=drift",
				"CUDA_MPS_PIPE_DIRECTORY=/run/gpuprep/mps/alice-",
				"(bob) runs without MPS",
				"alice->(none)",
				"another user (uid 65533) reading it: gpuprep-epilog: open ",
				"Fleet: ",
				"gpuprep_job_gpu_energy_joules_total{",
			} {
				if !strings.Contains(text, want) {
					t.Errorf("DEMO_NODE=%s: the output lacks %q\n%s", node, want, text)
				}
			}
			if node == "dgxa100" { // GPU 0 in MIG mode: MPS per MIG device (issue 36 §4)
				for _, want := range []string{
					"MPS daemon: CUDA_VISIBLE_DEVICES=MIG-c7084fa3-7b13-75f5-db76-db7749cec117\nMPS daemon: CUDA_VISIBLE_DEVICES=MIG-d3278de5-bff1-7ce6-827b-4f3167a8cb04\n",
					"mps@gpu:MIG-c7084fa3-7b13-75f5-db76-db7749cec117 (none)->alice, mps@gpu:MIG-d3278de5-bff1-7ce6-827b-4f3167a8cb04 (none)->alice\"",
					"CUDA_MPS_LOG_DIRECTORY=/run/gpuprep/mps/alice-e70e075e1d9c/log\nCUDA_MPS_PIPE_DIRECTORY=/run/gpuprep/mps/alice-e70e075e1d9c/pipe\nCUDA_VISIBLE_DEVICES=MIG-c7084fa3-7b13-75f5-db76-db7749cec117\n",
					"restored=... mps@gpu:MIG-",
					"/run/gpuprep/mps after: 0 entries\n\n== Health",
				} {
					if !strings.Contains(text, want) {
						t.Errorf("DEMO_NODE=%s: the MIG MPS step lacks %q\n%s", node, want, text)
					}
				}
			}
			// GPU 0's simulated counter runs at 34% of the time; the
			// demo's job lasts well under a second, so the hooks' own
			// time moves the share by a point or two on a busy machine.
			if m := powerShareRE.FindStringSubmatch(text); m == nil {
				t.Errorf("DEMO_NODE=%s: the output lacks \"the GPU was at its power limit N%% of the time\"\n%s", node, text)
			} else if n, _ := strconv.Atoi(m[1]); n < 28 || n > 40 {
				t.Errorf("DEMO_NODE=%s: GPU 0 at its power limit %d%% of the time, want about 34%%", node, n)
			}
		})
	}
}

// powerShareRE finds the evidence report's advice on GPU 0's power cap.
var powerShareRE = regexp.MustCompile(`the GPU was at its power limit (\d+)% of the time`)

// The demo refuses a node it has no simulation for, saying which it has.
func TestDemoUnknownNode(t *testing.T) {
	root, err := testroot.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "examples/demo.sh")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "BIN="+filepath.Dir(bin(t, "gpuprep-prolog")), "DEMO_NODE=dgx1")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "want dgxh100, dgxa100 or dgxb200") {
		t.Fatalf("DEMO_NODE=dgx1: %v\n%s", err, out)
	}
}
