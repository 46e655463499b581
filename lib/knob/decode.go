package knob

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Decoders of TOML values shared by the knobs' Defs (see Def.Decode). Their
// messages are the configuration's: "must be ..." without key or value.

// errType is the error for a value of the wrong TOML type.
func errType(what string) error { return errors.New("must be " + what) }

// decodeOneOf accepts a string among allowed, as written.
func decodeOneOf(allowed ...string) func(any) (string, error) {
	return func(raw any) (string, error) {
		s, ok := raw.(string)
		if !ok {
			return "", errType("a string")
		}
		for _, a := range allowed {
			if s == a {
				return s, nil
			}
		}
		return "", fmt.Errorf("must be one of %s%s", strings.Join(allowed, ", "), didYouMean(s, allowed))
	}
}

// decodeInt accepts an integer lo..hi, in decimal.
func decodeInt(lo, hi int) func(any) (string, error) {
	return func(raw any) (string, error) {
		n, err := decodeIntRaw(raw)
		if err != nil {
			return "", err
		}
		if n < int64(lo) || n > int64(hi) {
			return "", fmt.Errorf("must be %d..%d", lo, hi)
		}
		return strconv.FormatInt(n, 10), nil
	}
}

// decodeIntRaw accepts an integer of any range.
func decodeIntRaw(raw any) (int64, error) {
	n, ok := raw.(int64)
	if !ok {
		return 0, errType("an integer")
	}
	return n, nil
}

// decodeOnOff accepts true or false, as "on" or "off".
func decodeOnOff(raw any) (string, error) {
	b, ok := raw.(bool)
	if !ok {
		return "", errType("true or false")
	}
	return string(onOff(b)), nil
}

// didYouMean returns ` (did you mean "x"?)` when one of candidates is close
// to s.
func didYouMean(s string, candidates []string) string {
	if c := closest(s, candidates); c != "" {
		return ` (did you mean "` + c + `"?)`
	}
	return ""
}

// closest returns the candidate most like s (same letters in another case,
// or at most a third of s's letters mistyped, two at most), or "" if none
// is. (lib/config has the same rule for keys.)
func closest(s string, candidates []string) string {
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

// editDistance is the Levenshtein distance between a and b, in bytes; 1<<30
// for inputs longer than 64 bytes.
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
