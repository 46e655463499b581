package health

import "testing"

func TestHeavyDiag(t *testing.T) {
	for _, c := range []struct {
		argv  []string
		heavy bool
	}{
		{[]string{"/usr/bin/dcgmi", "diag", "-r", "1"}, false},
		{[]string{"/usr/bin/dcgmi", "diag", "--run", "quick"}, false},
		{[]string{"/usr/bin/dcgmi", "diag", "-r", "2"}, true},
		{[]string{"/usr/bin/dcgmi", "diag", "-r3"}, true},
		{[]string{"/usr/bin/dcgmi", "diag", "--run=4", "-j"}, true},
		{[]string{"/usr/bin/dcgmi", "diag", "-r", "memory"}, true},
		{[]string{"/usr/bin/dcgmi", "discovery", "-l"}, false},
		{[]string{"/usr/local/bin/site-check", "-r", "3"}, false},
		{nil, false},
	} {
		if got := HeavyDiag(c.argv) != ""; got != c.heavy {
			t.Errorf("%q: heavy %v, want %v", c.argv, got, c.heavy)
		}
	}
}
