package drift

import "testing"

func TestCompactNodes(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"gpu01"}, "gpu01"},
		{[]string{"gpu03", "gpu01", "gpu02", "gpu07", "gpu02"}, "gpu[01-03,07]"},
		{[]string{"node9", "node10", "node11", "node1"}, "node[1,9],node[10-11]"},
		{[]string{"gpu1", "gpu01"}, "gpu1,gpu01"},
		{[]string{"login", "a-b2", "a-b3", "", "rack1-gpu004"}, "a-b[2-3],rack1-gpu004,?,login"},
		{[]string{"n12345678901234567890"}, "n12345678901234567890"},
	} {
		if got := CompactNodes(c.in); got != c.want {
			t.Errorf("CompactNodes(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
