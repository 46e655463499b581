package config

import "fmt"

// maxNesting bounds how deep { and [ may nest in a configuration. Real ones
// nest three or four levels; the TOML decoder takes time that grows fast with
// depth (8,000 nested inline tables took 43 s to reject), so deeper files are
// refused before decoding.
const maxNesting = 32

// checkNesting scans TOML source for { and [ nested deeper than maxNesting,
// outside strings and comments, and returns an *Error naming the line where
// the limit is passed. It only counts: the decoder reports any other syntax
// error, so an unbalanced bracket here is not an error.
func checkNesting(name string, src []byte) error {
	depth, line := 0, 1
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '\n':
			line++
		case '#':
			for i+1 < len(src) && src[i+1] != '\n' {
				i++
			}
		case '"', '\'':
			i, line = skipString(src, i, line)
		case '{', '[':
			if depth++; depth > maxNesting {
				return &Error{File: name, Line: line, Msg: fmt.Sprintf("{ and [ nested deeper than %d levels", maxNesting)}
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}

// skipString returns the index of the last byte of the string starting at
// src[i] (a quote) and the line it ends on. Basic strings ("...", """...""")
// take backslash escapes, literal ones ('...', ”'...”') do not; a
// single-line string ends at the end of its line when unterminated.
func skipString(src []byte, i, line int) (int, int) {
	q := src[i]
	if i+2 < len(src) && src[i+1] == q && src[i+2] == q { // multi-line
		for j := i + 3; j < len(src); j++ {
			switch {
			case src[j] == '\n':
				line++
			case src[j] == '\\' && q == '"':
				if j+1 < len(src) && src[j+1] == '\n' {
					line++
				}
				j++
			case j+2 < len(src) && src[j] == q && src[j+1] == q && src[j+2] == q:
				// Up to two more quotes may belong to the string.
				j += 2
				for k := 0; k < 2 && j+1 < len(src) && src[j+1] == q; k++ {
					j++
				}
				return j, line
			}
		}
		return len(src), line
	}
	for j := i + 1; j < len(src); j++ {
		switch {
		case src[j] == '\n':
			return j - 1, line // unterminated: the decoder says so
		case src[j] == '\\' && q == '"':
			if j+1 < len(src) && src[j+1] == '\n' {
				return j, line
			}
			j++
		case src[j] == q:
			return j, line
		}
	}
	return len(src), line
}
