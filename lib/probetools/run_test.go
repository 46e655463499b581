package probetools

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// runFake runs one fake tool through Run and returns its only Result.
func runFake(t *testing.T, name, body string, o Options) Result {
	t.Helper()
	p := fake(t, t.TempDir(), name, body)
	rs := Run(context.Background(), []Tool{{Name: name, Path: p}}, o)
	if len(rs) != 1 {
		t.Fatalf("Run gave %d results, want 1: %+v", len(rs), rs)
	}
	return rs[0]
}

func TestRunDCGM(t *testing.T) {
	tests := []struct {
		name, body string
		pass       string
		version    string
		failed     []string
		errHas     string
	}{{
		name: "3.x layout, two failed", body: `cat "$DATA/dcgmi_diag_r2_v3_fail.json"; exit 226`,
		pass: "false", version: "3.3.5",
		failed: []string{
			"GPU 2: Page Retirement/Row Remap: GPU 2 had uncorrectable memory errors and row remapping failed. Row remapping failure indicates unrecoverable memory hardware damage. Reset the GPU or reboot the node immediately. (DCGM error 80, severity isolate)",
			"GPU 1: PCIe: Detected more than 8 PCIe replays per minute for GPU 1 : 57 Reconnect PCIe card. Run system side PCIE diagnostic utilities to verify hops off the GPU board. If issue is on the board, run the field diagnostic. (DCGM error 3, severity monitor)",
		},
	}, {
		name: "4.x layout, two failed", body: `cat "$DATA/dcgmi_diag_r2_v4_fail.json"; exit 226`,
		pass: "false", version: "4.2.3",
		failed: []string{
			`GPU 0: software: Persistence Mode: Persistence mode for GPU 0 is disabled. Enable persistence mode by running "nvidia-smi -i <gpuId> -pm 1 " as root. (DCGM error 29, severity config)`,
			"GPU 5: pcie: GPU 5 is running at PCI link generation 3, which is below the minimum allowed link generation of 4 (parameter 'min_pci_generation') (DCGM error 45, severity isolate)",
		},
	}, {
		name: "4.x layout, passed", body: `cat "$DATA/dcgmi_diag_r2_v4_pass.json"`,
		pass: "true", version: "4.2.3",
	}, {
		name: "runtime error", body: `cat "$DATA/dcgmi_diag_runtime_error.json"; exit 1`,
		pass: "nil", version: "", errHas: "DCGM could not run the diagnostic: Error: Diagnostic could not be run while DCGM is paused.",
	}, {
		// dcgmi/Command.cpp's message when there is no host engine.
		name: "no host engine", body: `echo "Error: unable to establish a connection to the specified host: localhost"; exit 231`,
		pass: "nil", errHas: "dcgmi diag: no JSON in its output: exit status 231: Error: unable to establish a connection to the specified host: localhost",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runFake(t, DCGMI, tc.body, Options{})
			if passString(r.Pass) != tc.pass || r.Version != tc.version || !reflect.DeepEqual(r.Failed, tc.failed) {
				t.Errorf("pass %s version %q failed\n%q\nwant pass %s version %q failed\n%q", passString(r.Pass), r.Version, r.Failed, tc.pass, tc.version, tc.failed)
			}
			if (tc.errHas == "") != (r.Error == "") || !strings.Contains(r.Error, tc.errHas) {
				t.Errorf("error %q, want one with %q", r.Error, tc.errHas)
			}
			if !reflect.DeepEqual(r.Args, []string{"diag", "-r", "2", "-j"}) || r.Tool != DCGMI {
				t.Errorf("tool %q args %q", r.Tool, r.Args)
			}
		})
	}
}

// The arguments dcgmi gets, and the version found beats the JSON's.
func TestRunDCGMArgv(t *testing.T) {
	d := t.TempDir()
	argv := filepath.Join(d, "argv")
	p := fake(t, d, DCGMI, `printf '%s\n' "$@" > `+argv+`; cat "$DATA/dcgmi_diag_r2_v4_pass.json"`)
	rs := Run(context.Background(), []Tool{{Name: DCGMI, Path: p, Version: "4.2.3-1"}}, Options{})
	b, _ := os.ReadFile(argv)
	if string(b) != "diag\n-r\n2\n-j\n" {
		t.Errorf("argv %q", b)
	}
	if len(rs) != 1 || rs[0].Version != "4.2.3-1" {
		t.Errorf("results %+v", rs)
	}
}

// A DCGM 4 test whose summary failed with no failed entity (an error of
// no entity) gives one failure with no GPU.
func TestParseDCGMSummaryOnly(t *testing.T) {
	doc := `Some line before.
{"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [
 {"name": "memory", "results": [{"entity_group": "GPU", "entity_group_id": 1, "entity_id": 0, "status": "Pass"}],
  "test_summary": {"status": "Fail", "warnings": [{"error_category": 4, "error_id": 13, "error_severity": 2, "warning": "plugin aborted"}]}},
 {"name": "cpu_eud", "results": [{"entity_group": "CPU", "entity_group_id": 7, "entity_id": 0, "status": "Fail", "info": ["CPU EUD failed"]}],
  "test_summary": {"status": "Fail"}}]}]},
 "metadata": {"version": "4.6.0"}}`
	got, err := parseDCGM([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"memory: plugin aborted (DCGM error 13, severity isolate)", "CPU 0: cpu_eud: CPU EUD failed"}
	if got.Version != "4.6.0" || !reflect.DeepEqual(got.Failed, want) {
		t.Errorf("got %+v, want failed %q", got, want)
	}
	if _, err := parseDCGM([]byte(`{"DCGM Diagnostic": {"test_categories": []}}`)); err == nil {
		t.Error("no test results: no error")
	}
}

func TestRunAllReduce(t *testing.T) {
	tests := []struct {
		name, body string
		gpus       int
		pass       string
		version    string
		values     map[string]float64
		errHas     string
	}{{
		name: "nccl-tests 2.17, 8 GPUs", body: `cat "$DATA/all_reduce_perf_8xH100.txt"`, gpus: 8,
		pass: "true", version: "2.17.6",
		values: map[string]float64{"busbw_gbps_1GiB": 472.72, "busbw_gbps_16GiB": 478.41, "busbw_gbps_avg": 475.564},
	}, {
		// It exits non-zero when values were wrong: still its verdict.
		name: "old layout, wrong values", body: `cat "$DATA/all_reduce_perf_old_wrong.txt"; exit 3`, gpus: 2,
		pass:   "false",
		values: map[string]float64{"busbw_gbps_1GiB": 46.60, "busbw_gbps_16GiB": 46.71, "busbw_gbps_avg": 46.656},
	}, {
		name: "fails before 16 GiB", gpus: 8,
		body: `head -n 19 "$DATA/all_reduce_perf_8xH100.txt"
echo "gpu-node17: Test NCCL failure common.cu:1005 'unhandled cuda error (run with NCCL_DEBUG=INFO for details)'" >&2; exit 3`,
		pass: "nil", version: "2.17.6", values: map[string]float64{"busbw_gbps_1GiB": 472.72},
		errHas: "all_reduce_perf: exit status 3: gpu-node17: Test NCCL failure common.cu:1005",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runFake(t, AllReducePerf, tc.body, Options{GPUs: tc.gpus})
			if passString(r.Pass) != tc.pass || r.Version != tc.version || !reflect.DeepEqual(r.Values, tc.values) {
				t.Errorf("pass %s version %q values %v, want %s %q %v", passString(r.Pass), r.Version, r.Values, tc.pass, tc.version, tc.values)
			}
			if (tc.errHas == "") != (r.Error == "") || !strings.Contains(r.Error, tc.errHas) {
				t.Errorf("error %q, want one with %q", r.Error, tc.errHas)
			}
			want := []string{"-b", "1G", "-e", "16G", "-f", "16", "-g", strconv.Itoa(tc.gpus)}
			if !reflect.DeepEqual(r.Args, want) {
				t.Errorf("args %q, want %q", r.Args, want)
			}
		})
	}
}

// The loopback: a server, then a client to localhost, each HCA on its own
// port, one HCA after the other.
func TestRunIBLoopback(t *testing.T) {
	quick(t)
	d := t.TempDir()
	log := filepath.Join(d, "log")
	p := fake(t, d, IBWriteBW, `for a; do last=$a; done
if [ "$last" = localhost ]; then
	echo "client $*" >> `+log+`
	cat "$DATA/ib_write_bw_client.txt"
else
	echo "server $*" >> `+log+`
	sleep 0.2
	cat "$DATA/ib_write_bw_server.txt"
fi`)
	rs := Run(context.Background(), []Tool{{Name: IBWriteBW, Path: p, Version: "6.29"}}, Options{HCAs: []string{"mlx5_0", "mlx5_1"}})
	if len(rs) != 2 {
		t.Fatalf("results %+v", rs)
	}
	for i, hca := range []string{"mlx5_0", "mlx5_1"} {
		r := rs[i]
		gbit, gbps := r.Values["bw_gbit_"+hca], r.Values["bw_gbps_"+hca]
		if r.Error != "" || r.Pass != nil || gbit != 364.87 || math.Abs(gbps-45.60875) > 1e-9 || r.Version != "6.29" {
			t.Errorf("%s: %+v", hca, r)
		}
	}
	b, _ := os.ReadFile(log)
	want := "server -d mlx5_0 -F --report_gbits -D 5 -p 18600\n" +
		"client -d mlx5_0 -F --report_gbits -D 5 -p 18600 localhost\n" +
		"server -d mlx5_1 -F --report_gbits -D 5 -p 18601\n" +
		"client -d mlx5_1 -F --report_gbits -D 5 -p 18601 localhost\n"
	if string(b) != want {
		t.Errorf("runs:\n%s\nwant\n%s", b, want)
	}
}

// A client that cannot connect: an Error, and the server, which would
// wait for ever, is stopped.
func TestRunIBLoopbackClientFails(t *testing.T) {
	quick(t)
	d := t.TempDir()
	p := fake(t, d, IBWriteBW, `for a; do last=$a; done
if [ "$last" = localhost ]; then
	echo "Couldn't connect to localhost:18600" >&2; exit 1
fi
sleep 30 & echo $! > `+filepath.Join(d, "pid")+`; wait`)
	begun := time.Now()
	rs := Run(context.Background(), []Tool{{Name: IBWriteBW, Path: p}}, Options{HCAs: []string{"mlx5_0"}})
	if len(rs) != 1 {
		t.Fatalf("results %+v", rs)
	}
	r := rs[0]
	if took := time.Since(begun); took > 5*time.Second {
		t.Errorf("took %s", took)
	}
	if !strings.Contains(r.Error, "ib_write_bw client on mlx5_0: exit status 1: Couldn't connect to localhost:18600") || r.Values != nil {
		t.Errorf("result %+v", r)
	}
	waitGone(t, filepath.Join(d, "pid"))
}

// A tool that outlives its timeout is ended, its child with it; one that
// ignores SIGTERM gets SIGKILL.
func TestRunTimeout(t *testing.T) {
	quick(t)
	for _, trap := range []string{"", "trap '' TERM; "} {
		d := t.TempDir()
		pid := filepath.Join(d, "pid")
		begun := time.Now()
		r := runFake(t, DCGMI, trap+"sleep 30 & echo $! > "+pid+"; wait; wait", Options{Timeout: 200 * time.Millisecond})
		if took := time.Since(begun); took > 5*time.Second {
			t.Errorf("%q: took %s", trap, took)
		}
		if !strings.Contains(r.Error, "dcgmi diag: timed out after 200ms") || r.Pass != nil {
			t.Errorf("%q: result %+v", trap, r)
		}
		waitGone(t, pid)
	}
}

// Run runs only what it has something to do for, and nothing once ctx
// has ended.
func TestRunSkips(t *testing.T) {
	d := t.TempDir()
	tools := []Tool{
		{Name: IBWriteBW, Path: fake(t, d, IBWriteBW, "exit 1")},
		{Name: AllReducePerf, Path: fake(t, d, AllReducePerf, "exit 1")},
		{Name: DCGMI, Path: fake(t, d, DCGMI, `cat "$DATA/dcgmi_diag_r2_v4_pass.json"`)},
	}
	rs := Run(context.Background(), tools, Options{})
	if len(rs) != 1 || rs[0].Tool != DCGMI || passString(rs[0].Pass) != "true" {
		t.Errorf("results %+v", rs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if rs := Run(ctx, tools, Options{GPUs: 8, HCAs: []string{"mlx5_0"}}); len(rs) != 0 {
		t.Errorf("results after ctx ended: %+v", rs)
	}
}

func TestTimeoutFor(t *testing.T) {
	var o Options
	if o.timeoutFor(DCGMI) != 10*time.Minute || o.timeoutFor(AllReducePerf) != 5*time.Minute || o.timeoutFor(IBWriteBW) != 5*time.Minute {
		t.Error("defaults")
	}
	o.Timeout = time.Minute
	if o.timeoutFor(DCGMI) != time.Minute {
		t.Error("Options.Timeout")
	}
}

func TestCapped(t *testing.T) {
	setVar(t, &maxStdout, 10)
	r := runFake(t, DCGMI, `i=0; while [ $i -lt 100 ]; do echo 0123456789; i=$((i+1)); done`, Options{})
	if !strings.Contains(r.Error, "no JSON in its output") || !strings.HasSuffix(r.Error, "(output cut at 10 bytes)") {
		t.Errorf("result %+v", r)
	}
	c := &capped{max: 4}
	n, err := c.Write([]byte("abcdef"))
	if n != 6 || err != nil || c.buf.String() != "abcd" || c.dropped != 2 {
		t.Errorf("capped: %d %v %q %d", n, err, c.buf.String(), c.dropped)
	}
}
