package cpuset

import (
	"strconv"
	"strings"
	"testing"
)

func TestParseAndString(t *testing.T) {
	cases := []struct {
		in, want string
	}{
		{"", ""},
		{"\n", ""},
		{"0", "0"},
		{" 0-3,8-11\n", "0-3,8-11"},
		{"3,1,2", "1-3"},
		{"0-1", "0-1"},
		{"0,0,0-2", "0-2"},
		{"5-5", "5"},
		{"0-63,64-127", "0-127"},
		{"0-55,112-167", "0-55,112-167"},
		{" 1 , 3 - 4 ", "1,3-4"},
		// runs that end or start at a word's edge
		{"63", "63"},
		{"63-64", "63-64"},
		{"0-63", "0-63"},
		{"64-127,129", "64-127,129"},
		{"62-63,65-66", "62-63,65-66"},
		{"0-191", "0-191"},
		{"1,3,5,127-128,255", "1,3,5,127-128,255"},
	}
	for _, c := range cases {
		got, err := Parse(c.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if got.String() != c.want {
			t.Errorf("Parse(%q).String() = %q, want %q", c.in, got.String(), c.want)
		}
	}
}

func TestParseBad(t *testing.T) {
	for _, in := range []string{"1-", "-1", "3-0", "a", "1,,2", "1-2-3", "0x1", "99999999", "1;2", "1 2", "+1"} {
		if s, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) = %s, want an error", in, s)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("Parse(%q) error spans lines: %q", in, err)
		}
	}
}

func TestAlgebra(t *testing.T) {
	a := MustParse("0-7")
	b := MustParse("4-11")
	if got := a.Union(b).String(); got != "0-11" {
		t.Errorf("union %s", got)
	}
	if got := a.Intersection(b).String(); got != "4-7" {
		t.Errorf("intersection %s", got)
	}
	if got := a.Difference(b).String(); got != "0-3" {
		t.Errorf("difference %s", got)
	}
	if got := b.Difference(a).String(); got != "8-11" {
		t.Errorf("difference %s", got)
	}
	if !MustParse("4-5").IsSubsetOf(a) || b.IsSubsetOf(a) {
		t.Error("IsSubsetOf")
	}
	// Immutability: operations leave their operands alone.
	if a.String() != "0-7" || b.String() != "4-11" {
		t.Errorf("operands changed: %s %s", a, b)
	}
	big := MustParse("200")
	if got := big.Intersection(a); !got.IsEmpty() || !got.Equal(New()) {
		t.Errorf("disjoint intersection %s not empty/equal", got)
	}
	if a.Union(big).Difference(big).String() != "0-7" {
		t.Error("difference must drop trailing words")
	}
	if a.Size() != 8 || a.Min() != 0 || a.Max() != 7 || New().Max() != -1 || New().Min() != -1 {
		t.Error("Size/Min/Max")
	}
}

func TestMask(t *testing.T) {
	s := MustParse("0-55,112-167")
	m := s.Mask(224)
	if m != "00000000,000000ff,ffffffff,ffff0000,00000000,00ffffff,ffffffff" {
		t.Errorf("Mask(224) = %s", m)
	}
	back, err := ParseMask(m)
	if err != nil || !back.Equal(s) {
		t.Fatalf("ParseMask(Mask) = %s, %v; want %s", back, err, s)
	}
	for _, c := range []struct {
		set   string
		nbits int
		want  string
	}{
		{"0-39", 40, "ff,ffffffff"},
		{"0-31", 32, "ffffffff"},
		{"4", 144, "0000,00000000,00000000,00000000,00000010"},
		{"", 8, "00"},
		{"70", 8, "40,00000000,00000000"}, // widened to 71 bits
	} {
		if got := MustParse(c.set).Mask(c.nbits); got != c.want {
			t.Errorf("Mask(%s, %d) = %q, want %q", c.set, c.nbits, got, c.want)
		}
	}
	if got, _ := ParseMask("ff\n"); got.String() != "0-7" {
		t.Errorf("ParseMask(ff) = %s", got)
	}
	if got, _ := ParseMask("00000001,00000000"); got.String() != "32" {
		t.Errorf("ParseMask word order: %s", got)
	}
	if _, err := ParseMask("zz"); err == nil {
		t.Error("ParseMask(zz) should fail")
	}
}

func TestTextRoundTrip(t *testing.T) {
	var s Set
	if err := s.UnmarshalText([]byte("1-3,9")); err != nil {
		t.Fatal(err)
	}
	b, _ := s.MarshalText()
	if string(b) != "1-3,9" {
		t.Errorf("MarshalText %q", b)
	}
	if err := s.UnmarshalText([]byte("x")); err == nil {
		t.Error("UnmarshalText(x) should fail")
	}
}

// FuzzParse: Parse never panics; what it accepts formats to a canonical list
// that parses back to the same set, and that set's mask round-trips.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"0-3,8-11", "", "1-", "3-0", "a", "0,65,128-130", " 7 \n", "65535"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Parse(in)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		again, err := Parse(s.String())
		if err != nil || !again.Equal(s) {
			t.Fatalf("round trip of %q: %q -> %v %v", in, s.String(), again, err)
		}
		if want := listString(s.List()); s.String() != want {
			t.Fatalf("String of %q: %q, want %q", in, s.String(), want)
		}
		if s.Size() > 0 && s.Size() < 4096 {
			m, err := ParseMask(s.Mask(0))
			if err != nil || !m.Equal(s) {
				t.Fatalf("mask round trip of %q: %v", s, err)
			}
		}
	})
}

// listString is a CPU list's text made the plain way, from its ids: what
// String must give.
func listString(ids []int) string {
	var parts []string
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, strconv.Itoa(ids[i])+"-"+strconv.Itoa(ids[j]))
		} else {
			parts = append(parts, strconv.Itoa(ids[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
