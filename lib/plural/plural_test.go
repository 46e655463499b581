package plural

import "testing"

func TestCount(t *testing.T) {
	for n, want := range map[int]string{0: "0 records", 1: "1 record", 2: "2 records"} {
		if got := Count(n, "record", "records"); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
	if Word(1, "way", "ways") != "way" || Word(3, "way", "ways") != "ways" {
		t.Error("Word")
	}
}
