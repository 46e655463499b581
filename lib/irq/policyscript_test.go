package irq

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gpuprep/lib/cpuset"
)

// runPolicy runs a policy script the way irqbalance does (popen of
// "exec <script> <path> <irq>", so /bin/sh -c) and returns its output and
// exit code. Anything on its stderr (irqbalance's journal) fails the test.
func runPolicy(t *testing.T, script, devPath, irq string) (string, int) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", "exec "+script+" "+devPath+" "+irq)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %s: %v", script, err)
	}
	if stderr.Len() > 0 {
		t.Errorf("%s %s %s wrote to stderr: %q", script, devPath, irq, stderr.String())
	}
	return string(out), code
}

// fakeIRQs makes irqDir/<irq>/smp_affinity_list for each IRQ given, with
// the CPU list given, as the kernel shows it (a newline after).
func fakeIRQs(t *testing.T, irqDir string, lists map[string]string) {
	t.Helper()
	for n, l := range lists {
		if err := os.MkdirAll(filepath.Join(irqDir, n), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(irqDir, n, "smp_affinity_list"), []byte(l+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// affinityOf reads irqDir/<irq>/smp_affinity_list without its newline.
func affinityOf(t *testing.T, irqDir, n string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(irqDir, n, "smp_affinity_list"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(string(b), "\n")
}

// TestPolicyScript runs the generated script under /bin/sh for listed and
// unlisted IRQs, as a file and as one of a folder of scripts, with the
// list missing, without a final newline, and at a path that needs quoting.
func TestPolicyScript(t *testing.T) {
	dir := t.TempDir()
	list := filepath.Join(dir, "it's banned") // a quote and a space: quoted in the script
	if err := os.WriteFile(list, []byte(FormatPlacedFor([]Placed{{IRQ: 61, From: cpuset.MustParse("0-3"), To: cpuset.MustParse("0")}, {IRQ: 60, From: cpuset.MustParse("0-3"), To: cpuset.MustParse("1"), Refused: true}, {IRQ: 160, From: cpuset.MustParse("2"), To: cpuset.MustParse("0-1")}},
		&Basis{Online: cpuset.MustParse("0-16"), Housekeeping: cpuset.MustParse("16")})), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, inDir := range []bool{false, true} {
		script := filepath.Join(dir, "policy")
		if inDir {
			script += "-dir"
		}
		if err := os.WriteFile(script, []byte(PolicyScript(list, filepath.Join(dir, "no-irqs"), inDir)), 0o755); err != nil {
			t.Fatal(err)
		}
		none := 0
		if inDir {
			none = 1
		}
		dev := "/sys/bus/pci/devices/0000:18:00.0"
		for _, tc := range []struct {
			path, irq string
			ban       bool
		}{
			{dev, "60", true},
			{dev, "61", true},
			{"/sys", "160", true},
			{dev, "16", false},
			{dev, "6", false}, // a prefix of a listed IRQ
			{dev, "600", false},
			{dev, "", false},
		} {
			out, code := runPolicy(t, script, tc.path, tc.irq)
			wantOut, wantCode := "", none
			if tc.ban {
				wantOut, wantCode = "ban=true\n", 0
			}
			if out != wantOut || code != wantCode {
				t.Errorf("inDir=%v IRQ %q: %q, exit %d; want %q, exit %d", inDir, tc.irq, out, code, wantOut, wantCode)
			}
		}
	}
	script := filepath.Join(dir, "policy")
	// No final newline: the last IRQ still counts.
	if err := os.WriteFile(list, []byte("5\n7"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := runPolicy(t, script, "/sys", "7"); out != "ban=true\n" || code != 0 {
		t.Errorf("no final newline: %q, %d", out, code)
	}
	// Blank lines never ban an IRQ irqbalance passes empty.
	if err := os.WriteFile(list, []byte("\n\n5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := runPolicy(t, script, "/sys", "''"); out != "" || code != 0 {
		t.Errorf("blank lines, empty IRQ: %q, %d", out, code)
	}
	// No list: nothing banned.
	if err := os.Remove(list); err != nil {
		t.Fatal(err)
	}
	if out, code := runPolicy(t, script, "/sys", "5"); out != "" || code != 0 {
		t.Errorf("no list: %q, %d", out, code)
	}
	if s := PolicyScript(PlacedPath, ProcIRQDir, false); !strings.Contains(s, "list='/run/gpuprep/irq-placed'\nirqs='/proc/irq'\n") || !strings.HasPrefix(s, "#!/bin/sh\n") {
		t.Errorf("script:\n%s", s)
	}
}

// TestPolicyScriptPutsBack: a listed IRQ that holds other CPUs than
// gpuprep set (irqbalance moved it in a pass before its rescan) is put
// back as the script bans it; one already there, one the kernel refused,
// one whose listed CPUs are not a CPU list, and one with no folder are
// banned and left as they are, silently.
func TestPolicyScriptPutsBack(t *testing.T) {
	dir := t.TempDir()
	irqs := filepath.Join(dir, "irq")
	list := filepath.Join(dir, "irq-placed")
	text := FormatPlacedFor([]Placed{
		{IRQ: 61, From: cpuset.MustParse("0-3"), To: cpuset.MustParse("0,2")},
		{IRQ: 62, From: cpuset.MustParse("0-3"), To: cpuset.MustParse("0-1,4-5")},
		{IRQ: 63, From: cpuset.MustParse("3"), To: cpuset.MustParse("0"), Refused: true},
		{IRQ: 64, From: cpuset.MustParse("3"), To: cpuset.MustParse("0")},
	}, &Basis{Online: cpuset.MustParse("0-7"), Housekeeping: cpuset.MustParse("0,2")})
	text += "65 3 0;touch${IFS}" + filepath.Join(dir, "pwned") + "\n"
	if err := os.WriteFile(list, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	fakeIRQs(t, irqs, map[string]string{"61": "0-1", "62": "0-1,4-5", "63": "3", "65": "3", "70": "1"})
	for _, inDir := range []bool{false, true} {
		script := filepath.Join(dir, fmt.Sprintf("policy-%v", inDir))
		if err := os.WriteFile(script, []byte(PolicyScript(list, irqs, inDir)), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct{ irq, want string }{
			{"61", "0,2"},     // moved by irqbalance: put back
			{"62", "0-1,4-5"}, // where gpuprep put it
			{"63", "3"},       // the kernel refused: left
			{"65", "3"},       // not a CPU list: never written
		} {
			if out, code := runPolicy(t, script, "/sys", tc.irq); out != "ban=true\n" || code != 0 {
				t.Errorf("inDir=%v IRQ %s: %q, exit %d; want ban=true, exit 0", inDir, tc.irq, out, code)
			}
			if got := affinityOf(t, irqs, tc.irq); got != tc.want {
				t.Errorf("inDir=%v IRQ %s: smp_affinity_list %q after the script, want %q", inDir, tc.irq, got, tc.want)
			}
		}
		// Listed, but gone from the kernel: banned, nothing written.
		if out, code := runPolicy(t, script, "/sys", "64"); out != "ban=true\n" || code != 0 {
			t.Errorf("inDir=%v IRQ 64 (no folder): %q, exit %d", inDir, out, code)
		}
		if _, err := os.Stat(filepath.Join(irqs, "64")); !os.IsNotExist(err) {
			t.Errorf("inDir=%v: the script made %s/64: %v", inDir, irqs, err)
		}
		// Not listed: not touched.
		runPolicy(t, script, "/sys", "70")
		if got := affinityOf(t, irqs, "70"); got != "1" {
			t.Errorf("inDir=%v: unlisted IRQ 70 holds %q, want 1", inDir, got)
		}
		fakeIRQs(t, irqs, map[string]string{"61": "0-1"})
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); !os.IsNotExist(err) {
		t.Errorf("a list field ran as a command: %v", err)
	}
}

func TestPlacedRoundTrip(t *testing.T) {
	in := []Placed{
		{IRQ: 161, From: cpuset.MustParse("0-7"), To: cpuset.MustParse("0-1,4-5")},
		{IRQ: 60, From: cpuset.MustParse("3"), To: cpuset.MustParse("0"), Refused: true},
	}
	text := FormatPlaced(in)
	if want := "# IRQs placed by gpuprep: irq, affinity before, affinity set\n60 3 0 refused\n161 0-7 0-1,4-5\n"; text != want {
		t.Errorf("FormatPlaced = %q, want %q", text, want)
	}
	got, err := ParsePlaced(PlacedPath, []byte(text))
	if err != nil || len(got) != 2 || got[0].IRQ != 60 || !got[0].Refused || got[1].IRQ != 161 || !got[1].To.Equal(cpuset.MustParse("0-1,4-5")) || !got[1].From.Equal(cpuset.MustParse("0-7")) {
		t.Errorf("ParsePlaced = %+v, %v", got, err)
	}
	for _, bad := range []string{"60 0 1\nsixty 0 1\n", "60 0 1\n-1 0 1\n", "60 0 1\n61 0\n", "60 0 1\n61 x 1\n", "60 0 1\n60 0 1\n", "60 0 1\n61 0 1 maybe\n", "60 0 1\n61 0 \"\"\n"} {
		_, err := ParsePlaced(PlacedPath, []byte(bad))
		if err == nil || !strings.HasPrefix(err.Error(), PlacedPath+":2: ") {
			t.Errorf("ParsePlaced(%q) = %v, want an error at line 2", bad, err)
		}
	}
	if _, err := ParsePlaced(PlacedPath, []byte("61 0 1\n60 0 1\n61 2 3\n")); err == nil || err.Error() != PlacedPath+":3: IRQ 61 listed twice" {
		t.Errorf("an IRQ listed again two lines on: %v", err)
	}
}

// TestPackagedPolicyScript: the script the packages install at
// PolicyScriptPath is PolicyScript(PlacedPath, ProcIRQDir, false), byte for byte, and
// executable. Regenerate it with the text this test prints.
func TestPackagedPolicyScript(t *testing.T) {
	const packaged = "../../packaging/irqbalance-policy"
	b, err := os.ReadFile(packaged)
	if err != nil {
		t.Fatal(err)
	}
	if want := PolicyScript(PlacedPath, ProcIRQDir, false); string(b) != want {
		t.Errorf("%s differs from PolicyScript(PlacedPath, ProcIRQDir, false); it should read:\n%s", packaged, want)
	}
	if fi, err := os.Stat(packaged); err != nil || fi.Mode().Perm()&0o111 != 0o111 {
		t.Errorf("%s: not executable by all (irqbalance's sandboxed unit runs it as another user): %v", packaged, err)
	}
}

// A list keeps the basis it was computed for, which ParsePlaced skips and
// the policy script does not take for an IRQ.
func TestPlacedBasis(t *testing.T) {
	ps := []Placed{{IRQ: 61, From: cpuset.MustParse("0-3"), To: cpuset.MustParse("0")}}
	for _, b := range []Basis{
		{Online: cpuset.MustParse("0-223"), Housekeeping: cpuset.MustParse("0-1,112-113")},
		{Online: cpuset.MustParse("0-7")},
	} {
		text := FormatPlacedFor(ps, &b)
		got, ok := ParseBasis([]byte(text))
		if !ok || !got.Equal(b) {
			t.Errorf("%q: basis %+v, %v", text, got, ok)
		}
		back, err := ParsePlaced(PlacedPath, []byte(text))
		if err != nil || len(back) != 1 || back[0].IRQ != 61 {
			t.Errorf("ParsePlaced(%q) = %+v, %v", text, back, err)
		}
	}
	if _, ok := ParseBasis([]byte(FormatPlaced(ps))); ok {
		t.Error("a basis read from a list without one")
	}
	if _, ok := ParseBasis([]byte("# computed for online CPUs x, housekeeping CPUs 0\n")); ok {
		t.Error("a garbled basis read")
	}
}
