package knob

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"gpuprep/lib/suggest"
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
		return "", fmt.Errorf("must be one of %s%s", strings.Join(allowed, ", "), suggest.DidYouMean(s, allowed))
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
