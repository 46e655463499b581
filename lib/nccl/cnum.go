package nccl

import "math"

// strtol is C's strtol(s, NULL, 0) as glibc does it, which is how NCCL
// reads its integer variables (ncclLoadParam: strtoll base 0): leading
// white space, an optional sign, then "0x" hex, "0" octal or decimal
// digits, stopping at the first other character. ok is false when
// the value overflows (ERANGE: NCCL then keeps the default). No digit
// at all reads as 0, as in C.
func strtol(s string) (v int64, ok bool) {
	i, neg := spaceAndSign(s)
	base := uint64(10)
	switch {
	case i+2 < len(s) && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X') && hexDigit(s[i+2]) >= 0:
		base, i = 16, i+2
	case i < len(s) && s[i] == '0':
		base = 8
	}
	var u uint64
	digits := 0
	for ; i < len(s); i++ {
		d := hexDigit(s[i])
		if d < 0 || uint64(d) >= base {
			break
		}
		if u > (math.MaxUint64-uint64(d))/base {
			return 0, false
		}
		u = u*base + uint64(d)
		digits++
	}
	if digits == 0 {
		return 0, true
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}

// atoi is C's atoi: strtol base 10 with no error; 0 when nothing parses.
func atoi(s string) int32 {
	i, neg := spaceAndSign(s)
	var v int64
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		v = v*10 + int64(s[i]-'0')
		if v > math.MaxInt32 {
			v = math.MaxInt32 // glibc's atoi truncates a long; any huge port matches nothing
		}
	}
	if neg {
		v = -v
	}
	return int32(v)
}

// spaceAndSign skips C's leading white space and an optional sign: the
// index of what follows, and whether the sign was '-'.
func spaceAndSign(s string) (i int, neg bool) {
	for i < len(s) && (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r')) {
		i++
	}
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	return i, neg
}

func hexDigit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
