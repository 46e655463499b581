// Package suggest finds the word a user most likely meant, for "did you
// mean" hints in configuration errors (lib/config's keys, lib/knob's values).
package suggest

import "strings"

// Closest returns the candidate most like s (same letters in another case,
// or at most a third of s's letters mistyped, two at most), or "" if none is.
func Closest(s string, candidates []string) string {
	best, bestD := "", 0
	limit := min(2, max(1, len(s)/3))
	for _, c := range candidates {
		if c == s {
			continue
		}
		d := editDistance(strings.ToLower(s), strings.ToLower(c))
		if d <= limit && (best == "" || d < bestD) {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes. Inputs
// longer than 64 bytes are not compared (a typo of a key is short).
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 30
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// DidYouMean returns ` (did you mean "x"?)` when one of candidates is close
// to s, else "".
func DidYouMean(s string, candidates []string) string {
	if c := Closest(s, candidates); c != "" {
		return ` (did you mean "` + c + `"?)`
	}
	return ""
}
