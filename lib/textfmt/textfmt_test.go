package textfmt

import "testing"

func TestClipFitHead(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Clip("abcdef", 4), "abcd..."},
		{Clip("abcd", 4), "abcd"},
		{Clip("", 4), ""},
		{Fit("abcdefgh", 6), "abc..."},
		{Fit("abcdef", 6), "abcdef"},
		{Head("abcdef", 4), "abcd"},
		{Head("abc", 4), "abc"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestWords(t *testing.T) {
	if got := JoinInts([]int{0, 2, -3}, ","); got != "0,2,-3" {
		t.Errorf("JoinInts: %q", got)
	}
	if got := JoinInts(nil, ", "); got != "" {
		t.Errorf("JoinInts(nil): %q", got)
	}
	if EnabledDisabled(true) != "enabled" || EnabledDisabled(false) != "disabled" {
		t.Error("EnabledDisabled")
	}
}
