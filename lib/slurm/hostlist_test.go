package slurm

import (
	"reflect"
	"strings"
	"testing"
)

func TestExpandHostlist(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", []string{}},
		{"login1", []string{"login1"}},
		{"gpu[01-03,07],login1", []string{"gpu01", "gpu02", "gpu03", "gpu07", "login1"}},
		{"gpu[1-3]", []string{"gpu1", "gpu2", "gpu3"}},
		{"gpu[8-10]", []string{"gpu8", "gpu9", "gpu10"}},
		{"gpu[08-10]", []string{"gpu08", "gpu09", "gpu10"}},
		{"n[001-2]", []string{"n001", "n002"}},
		{"a,b c\td", []string{"a", "b", "c", "d"}},
		{",a,,b,", []string{"a", "b"}},
		{"r[1-2]n[1-2]", []string{"r1n1", "r1n2", "r2n1", "r2n2"}},
		{"r[1-2]-n[01-02]", []string{"r1-n01", "r1-n02", "r2-n01", "r2-n02"}},
		{"[1-2]", []string{"1", "2"}},
		{"x[1][2]", []string{"x12"}},
		{"/dev/nvidia[0-3]", []string{"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2", "/dev/nvidia3"}},
		{"/dev/nvidia[0,2-3]", []string{"/dev/nvidia0", "/dev/nvidia2", "/dev/nvidia3"}},
		{"/dev/nvidia0,/dev/nvidia-caps/nvidia-cap[21-22]", []string{"/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap21", "/dev/nvidia-caps/nvidia-cap22"}},
		{"n[3,1]", []string{"n3", "n1"}},
		{"n1,n1", []string{"n1", "n1"}},
	}
	for _, tt := range tests {
		got, err := ExpandHostlist(tt.in)
		if err != nil {
			t.Errorf("ExpandHostlist(%q): %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ExpandHostlist(%q) = %q, want %q", tt.in, got, tt.want)
		}
		h, _ := ParseHostlist(tt.in)
		if h.Len() != len(tt.want) {
			t.Errorf("Len(%q) = %d, want %d", tt.in, h.Len(), len(tt.want))
		}
		for _, n := range tt.want {
			if !h.Contains(n) {
				t.Errorf("%q should contain %q", tt.in, n)
			}
		}
	}
}

func TestHostlistBad(t *testing.T) {
	tests := []struct{ in, msg string }{
		{"gpu[01-03", "unterminated '['"},
		{"gpu01]", "unmatched ']'"},
		{"gpu[]", "empty '[]'"},
		{"gpu[3-1]", `range "3-1" is descending`},
		{"gpu[1-x]", `"x" is not a number`},
		{"gpu[1-]", "missing number"},
		{"gpu[-1]", "missing number"},
		{"gpu[1,,2]", "missing number"},
		{"gpu[1-2]-ib", "after ']'"},
		{"gpu[[1]]", "nested '['"},
		{"gpu[ 1]", "not a number"},
		{"n[0-65536]", "more than 65536"},
		{"n[0-300]x[0-300]", "more than 65536"},
		{"n[0-40000,30000-60000]", "[0-40000,30000-60000] names more than 65536"},
		{"n[0-40000],m[0-40000]", "names more than 65536"},
		{"n[1234567890123456789]", "too long"},
	}
	for _, tt := range tests {
		_, err := ExpandHostlist(tt.in)
		if err == nil {
			t.Errorf("ExpandHostlist(%q): no error, want %q", tt.in, tt.msg)
			continue
		}
		if !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("ExpandHostlist(%q) = %v, want it to say %q", tt.in, err, tt.msg)
		}
	}
}

func TestHostlistContains(t *testing.T) {
	h, err := ParseHostlist("gpu[01-04,07],login1,r[1-2]n[08-10]")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{
		"gpu01": true, "gpu04": true, "gpu07": true, "gpu05": false,
		"gpu1": false, "gpu001": false, "GPU01": false, "gpu": false,
		"login1": true, "login": false, "login10": false,
		"r1n08": true, "r2n10": true, "r1n8": false, "r3n09": false, "r12n09": false,
		"": false,
	} {
		if got := h.Contains(name); got != want {
			t.Errorf("Contains(%q) = %v, want %v", name, got, want)
		}
	}
	// Adjacent bracket groups need backtracking: x[1-12][1-2] holds x121
	// as 12,1 and as 1,21 is out of range.
	h2, _ := ParseHostlist("x[1-12][1-2]")
	if !h2.Contains("x121") || !h2.Contains("x11") || h2.Contains("x13") {
		t.Error("adjacent bracket groups matched wrongly")
	}
}

// TestHostlistContainsAgreesWithExpand holds Contains against Expand.
func TestHostlistContainsAgreesWithExpand(t *testing.T) {
	for _, expr := range []string{"a[1-3]b[01-02]", "n[8-12]", "n[08-12]", "x[1-12][1-2]", "p[0-1][0-10]"} {
		h, err := ParseHostlist(expr)
		if err != nil {
			t.Fatal(err)
		}
		in := map[string]bool{}
		for _, n := range h.Expand() {
			in[n] = true
			if !h.Contains(n) {
				t.Errorf("%s: Contains(%q) false for an expanded name", expr, n)
			}
		}
		// Every short name over the alphabet of the expression.
		for _, n := range shortNames("abnpx012", 5) {
			if h.Contains(n) != in[n] {
				t.Errorf("%s: Contains(%q) = %v, expanded says %v", expr, n, h.Contains(n), in[n])
			}
		}
	}
}

func shortNames(alpha string, maxLen int) []string {
	out := []string{""}
	level := []string{""}
	for l := 1; l <= maxLen; l++ {
		var next []string
		for _, p := range level {
			for i := 0; i < len(alpha); i++ {
				next = append(next, p+alpha[i:i+1])
			}
		}
		out = append(out, next...)
		level = next
	}
	return out
}

func FuzzHostlist(f *testing.F) {
	for _, s := range []string{"gpu[01-03,07],login1", "r[1-2]n[1-2]", "x[1-12][1-2]", "/dev/nvidia[0,2-3]", "a[", "a]", "[]", "n[0-99999]", "a[1-2]b", ",, ,"} {
		f.Add(s, "gpu01")
	}
	f.Fuzz(func(t *testing.T, expr, name string) {
		h, err := ParseHostlist(expr)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		n := h.Len()
		if n > MaxHostlistNames {
			t.Fatalf("parsed %q with %d names", expr, n)
		}
		_ = h.Contains(name)
		if n > 4096 {
			return
		}
		names := h.Expand()
		if len(names) != n {
			t.Fatalf("%q: Expand gave %d names, Len %d", expr, len(names), n)
		}
		for _, x := range names {
			if !h.Contains(x) {
				t.Fatalf("%q: Contains(%q) false for an expanded name", expr, x)
			}
		}
	})
}

func TestCompactHostlist(t *testing.T) {
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
		if got := CompactHostlist(c.in); got != c.want {
			t.Errorf("CompactHostlist(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
