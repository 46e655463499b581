package srunconf

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// ShowMax is how many bytes of a value srunwrap's messages show.
const ShowMax = 200

// Show renders a value of the user's (an environment variable, a file's
// content or name, a command name) for one of srunwrap's one-line
// messages: as it is when it is plain, Go-quoted when it holds spaces,
// control bytes, invalid UTF-8 or nothing, and clipped to its first
// ShowMax bytes with a count of what was cut when it is longer:
//
//	"GPU-aaaa…" (109,012 bytes, 108,812 not shown)
//
// Every place srunwrap echoes user input goes through Show (or ShowN), so
// that a 100 KB variable costs one short line, never a 100 KB one.
func Show(v string) string { return ShowN(v, ShowMax) }

// ShowN is Show with room for n bytes of the value (at least 16), for a
// message that shows a second value beside the first. The quoted text
// itself is kept within about n bytes: a value of control bytes, which
// quoting makes four times longer, shows fewer of them.
func ShowN(v string, n int) string {
	n = max(n, 16)
	if len(v) <= n {
		if q := strconv.Quote(v); len(q) <= n+2 {
			if q[1:len(q)-1] != v || v == "" || strings.ContainsAny(v, " \t") {
				return q
			}
			return v
		}
	}
	head := fit(v, n)
	q := strconv.Quote(v[:head])
	return q[:len(q)-1] + "…\" (" + Bytes(len(v)) + ", " + Thousands(len(v)-head) + " not shown)"
}

// fit is the length of the longest prefix of v, cut between runes, whose
// quoted form is at most n bytes (quotes aside).
func fit(v string, n int) int {
	used, i := 0, 0
	for i < len(v) {
		_, size := utf8.DecodeRuneInString(v[i:])
		w := len(strconv.Quote(v[i:i+size])) - 2
		if used+w > n {
			break
		}
		used, i = used+w, i+size
	}
	return i
}

// Bytes is a byte count in words: "1 byte", "109,012 bytes".
func Bytes(n int) string {
	if n == 1 {
		return "1 byte"
	}
	return Thousands(n) + " bytes"
}

// Thousands writes n with a comma between groups of three digits.
func Thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// QuoteN is ShowN always quoted, for a name inside a sentence
// (`"mlx5_3": no such device here`).
func QuoteN(v string, n int) string {
	if s := ShowN(v, n); strings.HasPrefix(s, `"`) {
		return s
	}
	return strconv.Quote(v)
}

// Clip shortens a message made elsewhere (an error of another package,
// a notice of the prolog's) that may hold a value of the user's to its
// first n bytes and a count of what was cut, as Show does for a value;
// line breaks in it are written as \n so that it stays one line.
func Clip(msg string, n int) string {
	msg = strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(msg)
	if len(msg) <= n {
		return msg
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + "… (" + Bytes(len(msg)) + ", " + Thousands(len(msg)-cut) + " not shown)"
}
