package irq

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// runPolicy runs a policy script the way irqbalance does (popen of
// "exec <script> <path> <irq>", so /bin/sh -c) and returns its output and
// exit code.
func runPolicy(t *testing.T, script, devPath, irq string) (string, int) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", "exec "+script+" "+devPath+" "+irq)
	out, err := cmd.Output()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %s: %v", script, err)
	}
	return string(out), code
}

// TestPolicyScript runs the generated script under /bin/sh for listed and
// unlisted IRQs, as a file and as one of a folder of scripts, with the
// list missing, without a final newline, and at a path that needs quoting.
func TestPolicyScript(t *testing.T) {
	dir := t.TempDir()
	list := filepath.Join(dir, "it's banned") // a quote and a space: quoted in the script
	if err := os.WriteFile(list, []byte(BannedList([]int{61, 60, 160, 60})), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, inDir := range []bool{false, true} {
		script := filepath.Join(dir, "policy")
		if inDir {
			script += "-dir"
		}
		if err := os.WriteFile(script, []byte(PolicyScript(list, inDir)), 0o755); err != nil {
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
	if s := PolicyScript(BannedListPath, false); !strings.Contains(s, "list='/run/gpuprep/irq-banned'\n") || !strings.HasPrefix(s, "#!/bin/sh\n") {
		t.Errorf("script:\n%s", s)
	}
}

func TestBannedList(t *testing.T) {
	if got := BannedList([]int{61, 60, 160, 60}); got != "60\n61\n160\n" {
		t.Errorf("BannedList = %q", got)
	}
	if got := BannedList(nil); got != "" {
		t.Errorf("BannedList(nil) = %q", got)
	}
	got, err := ParseBannedList(BannedListPath, []byte("61\n\n 60 \n160\n60\n"))
	if err != nil || !slices.Equal(got, []int{60, 61, 160}) {
		t.Errorf("ParseBannedList = %v, %v", got, err)
	}
	for _, bad := range []string{"60\nsixty\n", "60\n-1\n", "60 61\n", "99999999999\n"} {
		_, err := ParseBannedList(BannedListPath, []byte(bad))
		if err == nil || !strings.HasPrefix(err.Error(), BannedListPath+":2: ") && !strings.HasPrefix(err.Error(), BannedListPath+":1: ") {
			t.Errorf("ParseBannedList(%q) = %v", bad, err)
		}
	}
}
