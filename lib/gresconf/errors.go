package gresconf

import "fmt"

// ParseError is a problem in a configuration file: File as the caller named
// it, the 1-based Line (0 when the problem is the whole file), and a one-line
// Msg. Error() reads "gres.conf:12: Links= value \"1,x\": not a number".
// Warnings use the same type.
type ParseError struct {
	File string
	Line int
	Msg  string
}

func (e ParseError) Error() string {
	if e.Line <= 0 {
		return e.File + ": " + e.Msg
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}
