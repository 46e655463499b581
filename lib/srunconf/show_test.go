package srunconf

import (
	"strings"
	"testing"
)

func TestShow(t *testing.T) {
	long := "GPU-" + strings.Repeat("a", 109008)
	for _, c := range []struct{ in, want string }{
		{"0,1", "0,1"},
		{"", `""`},
		{"a b", `"a b"`},
		{"x\ny", `"x\ny"`},
		{long, `"GPU-` + strings.Repeat("a", 196) + `…" (109,012 bytes, 108,812 not shown)`},
		// Quoting makes a control byte 4 bytes: 50 of them fill the room.
		{strings.Repeat("\x01", 1000), `"` + strings.Repeat(`\x01`, 50) + `…" (1,000 bytes, 950 not shown)`},
		// A rune is never cut in two.
		{strings.Repeat("é", 150), `"` + strings.Repeat("é", 100) + `…" (300 bytes, 100 not shown)`},
	} {
		if got := Show(c.in); got != c.want {
			t.Errorf("Show(%.40q) = %.300s, want %.300s", c.in, got, c.want)
		}
	}
	if got := QuoteN("mlx5_3", 64); got != `"mlx5_3"` {
		t.Errorf("QuoteN = %s", got)
	}
	if got := Clip("a\nb"+strings.Repeat("c", 300), 10); got != `a\nbcccccc… (304 bytes, 294 not shown)` {
		t.Errorf("Clip = %s", got)
	}
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 109012: "109,012", 1234567: "1,234,567", -1000: "-1,000"} {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %s", n, got)
		}
	}
}
