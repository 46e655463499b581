package gpu

import (
	"strings"
	"testing"
)

func TestParseMIGMinors(t *testing.T) {
	m, err := ParseMIGMinors("mig-minors", []byte("config 1\nmonitor 2\ngpu0/gi0/access 3\ngpu0/gi0/ci0/access 4\n\ngpu1/gi1/access 147\ngpu1/gi1/ci0/access 148\n"))
	if err != nil {
		t.Fatal(err)
	}
	if m.GI(1, 1) != 147 || m.CI(1, 1, 0) != 148 || m.GI(0, 0) != 3 || m.CI(0, 0, 0) != 4 {
		t.Errorf("lookups wrong: %v", m)
	}
	if m.GI(2, 0) != -1 || m.CI(0, 0, 7) != -1 {
		t.Error("absent entries should be -1")
	}
	var none MIGMinors
	if none.GI(0, 0) != -1 {
		t.Error("nil map should give -1")
	}
	for _, bad := range []string{"config 1\ngpu0/gi0/access\n", "config 1\n\ngpu0/gi0/access x\n", "a b c\n", "config -1\n"} {
		_, err := ParseMIGMinors("/proc/driver/nvidia-caps/mig-minors", []byte(bad))
		if err == nil || !strings.HasPrefix(err.Error(), "/proc/driver/nvidia-caps/mig-minors:") {
			t.Errorf("%q: error %v, want one naming file:line", bad, err)
		}
	}
	_, err = ParseMIGMinors("f", []byte("config 1\n\ngpu0/gi0/access x\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "f:3:") {
		t.Errorf("error %v, want f:3:", err)
	}
}
