// Package textfmt holds the small pieces of text that several packages
// write the same way: a value clipped for a message, a list of numbers,
// a mode as a word. It imports only the standard library and no other
// package of gpuprep, so that any package can use it.
package textfmt

import (
	"strconv"
	"strings"
)

// Ellipsis marks where Clip and Fit cut a string.
const Ellipsis = "..."

// Clip is s cut to its first n bytes with Ellipsis after the cut, or s
// when it is no longer than n: a value of the user's or the node's in a
// message, at most n+3 bytes. It cuts bytes, not runes.
func Clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + Ellipsis
	}
	return s
}

// Fit is s cut so that it fits in n bytes with Ellipsis included (its
// first n-3 bytes and Ellipsis), or s when it is no longer than n.
func Fit(s string, n int) string {
	if len(s) > n {
		return s[:n-len(Ellipsis)] + Ellipsis
	}
	return s
}

// Head is the first n bytes of s, or s when it is no longer than n; no
// mark says that it was cut.
func Head(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// JoinInts writes v in decimal separated by sep ("0,2,3" with sep ","),
// "" for none.
func JoinInts(v []int, sep string) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, sep)
}

// EnabledDisabled is "enabled" for true and "disabled" for false: a mode
// as NVML and nvidia-smi name it.
func EnabledDisabled(on bool) string {
	if on {
		return "enabled"
	}
	return "disabled"
}
