package suggest

import "testing"

func TestClosest(t *testing.T) {
	keys := []string{"cpu_governor", "thp_enabled", "vm_swappiness"}
	for in, want := range map[string]string{
		"cpu_govenor":  "cpu_governor", // one letter missing
		"CPU_GOVERNOR": "cpu_governor", // case only
		"thp_enabld":   "thp_enabled",
		"swappiness":   "", // too far
		"cpu_governor": "", // itself is no suggestion
	} {
		if got := Closest(in, keys); got != want {
			t.Errorf("Closest(%q) = %q, want %q", in, got, want)
		}
	}
	if got := DidYouMean("thp_enabld", keys); got != ` (did you mean "thp_enabled"?)` {
		t.Errorf("DidYouMean = %q", got)
	}
	if got := DidYouMean("zzz", keys); got != "" {
		t.Errorf("DidYouMean(zzz) = %q", got)
	}
}
