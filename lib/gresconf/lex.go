package gresconf

import (
	"fmt"
	"strings"

	"gpuprep/lib/slurm"
)

// logicalLine is one line of a Slurm config file after comments are cut,
// continuations joined and escapes removed.
type logicalLine struct {
	no   int // first physical line
	text string
}

// logicalLines splits a Slurm config file the way parse_config.c's
// _get_next_line does:
//   - a '#' not preceded by an odd number of backslashes starts a comment
//     that runs to the end of the physical line;
//   - then an odd number of backslashes at the end of what is left, followed
//     only by white space (CR of a CRLF ending included), joins the next
//     physical line on directly: nothing is inserted, so "Name=gpu\" +
//     "File=x" reads "Name=gpuFile=x";
//   - then every backslash escapes the next byte ("\#" is '#', "\\" is '\').
//
// A continuation on the last line ends the file's last logical line (Slurm
// does the same); it is reported as a warning.
func logicalLines(data []byte) (lines []logicalLine, warn []ParseError, err *ParseError) {
	s := string(data)
	var cur strings.Builder
	start, no := 0, 0
	pending := false
	for len(s) > 0 || pending {
		if len(s) == 0 {
			warn = append(warn, ParseError{Line: start, Msg: "line continues past the end of the file"})
			lines = append(lines, logicalLine{no: start, text: unescape(cur.String())})
			break
		}
		no++
		phys := s
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			phys, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		if strings.IndexByte(phys, 0) >= 0 {
			return nil, nil, &ParseError{Line: no, Msg: "line contains a NUL byte"}
		}
		if !pending {
			start = no
			cur.Reset()
		}
		phys = slurm.StripComment(phys)
		body, cont := stripContinuation(phys)
		cur.WriteString(body)
		pending = cont
		if !cont {
			lines = append(lines, logicalLine{no: start, text: unescape(cur.String())})
		}
	}
	return lines, warn, nil
}

// stripContinuation reports whether s ends in an odd run of backslashes
// (then only white space), and returns s without the last backslash and
// what follows it.
func stripContinuation(s string) (string, bool) {
	i := len(s) - 1
	for i >= 0 && isSpace(s[i]) {
		i--
	}
	bs := 0
	for j := i; j >= 0 && s[j] == '\\'; j-- {
		bs++
	}
	if bs%2 == 1 {
		return s[:i], true
	}
	return s, false
}

// unescape drops each backslash and keeps the byte after it literally.
func unescape(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			if i >= len(s) {
				break
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// isSpace is C's isspace in the C locale.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// keyValue is one Key=Value of a line.
type keyValue struct {
	key   string // as written
	op    byte   // 0, or one of + - * / written before '='
	value string
}

// splitKeyValues cuts a logical line into Key=Value pairs with
// parse_config.c's rule: a key of letters, digits, '_' and '.'; white space
// allowed around '='; a value either in double quotes (may hold white space,
// may be empty) or a run of non-space bytes. Anything else is an error
// naming the text.
func splitKeyValues(s string) ([]keyValue, string) {
	var out []keyValue
	i := 0
	for {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i >= len(s) {
			return out, ""
		}
		k := i
		for i < len(s) && isKeyByte(s[i]) {
			i++
		}
		key := s[k:i]
		j := i
		for j < len(s) && isSpace(s[j]) {
			j++
		}
		var op byte
		if j < len(s) && strings.IndexByte("+-*/", s[j]) >= 0 {
			op = s[j]
			j++
		}
		if key == "" || j >= len(s) || s[j] != '=' {
			return out, fmt.Sprintf("unexpected text %s", slurm.Quote(strings.TrimRightFunc(s[k:], isSpaceRune)))
		}
		j++
		for j < len(s) && isSpace(s[j]) {
			j++
		}
		if j >= len(s) {
			return out, fmt.Sprintf("%s= has no value", key)
		}
		// Unquoted: a run of non-space bytes.
		u := j
		for u < len(s) && !isSpace(s[u]) {
			u++
		}
		value, end := s[j:u], u
		// Quoted: "..." followed by white space or the end; the longer
		// match wins, as with the POSIX regex Slurm uses.
		if s[j] == '"' {
			if q := strings.IndexByte(s[j+1:], '"'); q >= 0 {
				qend := j + 1 + q + 1
				if (qend == len(s) || isSpace(s[qend])) && qend >= u {
					value, end = s[j+1:qend-1], qend
				}
			}
		}
		out = append(out, keyValue{key: key, op: op, value: value})
		i = end
	}
}

func isKeyByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.'
}

func isSpaceRune(r rune) bool { return r < 0x80 && isSpace(byte(r)) }
