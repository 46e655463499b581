package config

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"gpuprep/lib/host"

	"github.com/BurntSushi/toml"
)

// defaultsTOML is the built-in configuration every file is laid over.
//
//go:embed defaults.toml
var defaultsTOML []byte

// BuiltinFile is the File of the configuration Default returns.
const BuiltinFile = "(built-in defaults)"

// maxFileSize bounds what Load reads: a configuration is a few kilobytes.
const maxFileSize = 1 << 20

// Load reads the configuration file at path. A missing file is an error,
// except at DefaultPath, where the built-in defaults stand in for it. A
// file that is not a regular file, is writable by every user (root acts on
// what it says), or is over 1 MiB is refused.
func Load(path string) (*Config, error) { return load(path, DefaultPath) }

// load is Load with the path that may be missing as a parameter, for tests.
func load(path, optional string) (*Config, error) {
	data, fi, err := host.ReadRegular(path, maxFileSize)
	switch {
	case errors.Is(err, fs.ErrNotExist) && filepath.Clean(path) == filepath.Clean(optional):
		return Default(), nil
	case err != nil:
		return nil, readError(path, err)
	case fi.Mode().Perm()&0o002 != 0:
		return nil, &Error{File: path, Msg: "refusing a configuration every user can write (chmod o-w)"}
	}
	return Parse(path, data)
}

func readError(path string, err error) error {
	reason := err
	var pe *fs.PathError
	if errors.As(err, &pe) {
		reason = pe.Err // the path is already in the message
	}
	var big *host.TooLargeError
	if errors.As(err, &big) {
		return &Error{File: path, Msg: big.Error(), Err: err}
	}
	return &Error{File: path, Msg: oneLine("cannot read: " + reason.Error()), Err: err}
}

// Parse reads a configuration from data, laid over the built-in defaults;
// name is the file name errors start with.
//
// Data over 1 MiB, not UTF-8 text (checkEncoding), or with { and [ nested
// more than 32 deep, is refused before it is decoded.
func Parse(name string, data []byte) (*Config, error) {
	if len(data) > maxFileSize {
		return nil, &Error{File: name, Msg: fmt.Sprintf("larger than %d bytes", maxFileSize)}
	}
	if err := checkEncoding(name, data); err != nil {
		return nil, err
	}
	if err := checkNesting(name, data); err != nil {
		return nil, err
	}
	var base Config
	if _, err := toml.Decode(string(defaultsTOML), &base); err != nil {
		panic("config: built-in defaults.toml: " + err.Error()) // TestDefault keeps it valid
	}
	return parseOnto(&base, name, data)
}

// boms are the byte order marks of the encodings a configuration may not
// be in, UTF-32's first: UTF-32 LE's starts with UTF-16 LE's.
var boms = []struct{ mark, encoding string }{
	{"\xff\xfe\x00\x00", "UTF-32"},
	{"\x00\x00\xfe\xff", "UTF-32"},
	{"\xff\xfe", "UTF-16"},
	{"\xfe\xff", "UTF-16"},
}

// checkEncoding refuses data that is not UTF-8 text: a UTF-16 or UTF-32
// byte order mark, whatever follows it (the TOML decoder skips a UTF-16
// one and reads on, so "\xff\xfe" before UTF-8 text would pass), and a
// NUL byte anywhere (UTF-16 or UTF-32 without a mark, or a binary file).
// A UTF-8 byte order mark is accepted, as the decoder accepts it.
func checkEncoding(name string, data []byte) error {
	for _, b := range boms {
		if bytes.HasPrefix(data, []byte(b.mark)) {
			return &Error{File: name, Msg: "encoded as " + b.encoding + " (it starts with a byte order mark): save it as UTF-8"}
		}
	}
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return &Error{File: name, Line: 1 + bytes.Count(data[:i], []byte("\n")),
			Msg: "a NUL byte: this is not UTF-8 text (UTF-16 or UTF-32 without a byte order mark, or binary); save it as UTF-8"}
	}
	return nil
}

// Default returns the built-in configuration (lib/config/defaults.toml).
func Default() *Config {
	c, err := parseOnto(&Config{}, BuiltinFile, defaultsTOML)
	if err != nil {
		panic("config: built-in defaults.toml: " + err.Error()) // TestDefault keeps it valid
	}
	return c
}

// parseOnto decodes data into cfg, which holds the values data may override,
// then checks the result. Every problem comes back as an *Error.
//
// The usual case costs one parse: decode, nothing undecoded, every key
// spelt exactly, values valid. Only a file with a problem is parsed again,
// into Primitives, to find the problem's key and line.
func parseOnto(cfg *Config, name string, data []byte) (_ *Config, err error) {
	defer func() {
		if r := recover(); r != nil { // a bug, not bad input: FuzzParse looks for this text
			err = &Error{File: name, Msg: oneLine(fmt.Sprintf("internal error: %v", r))}
		}
	}()
	src := string(data)
	md, err := toml.Decode(src, cfg)
	if err != nil || len(md.Undecoded()) > 0 || !keysExact(md) {
		if err := explain(name, src, err, md); err != nil {
			return nil, err
		}
		// keysExact is conservative: the file is fine after all.
	}
	cfg.File = name
	if ps := validate(cfg); len(ps) > 0 {
		return nil, ps.first(name, newLocator(src))
	}
	cfg.Defaults = cfg.Defaults.normalized()
	return cfg, nil
}

// explain finds what is wrong with a file the decoder rejected (decodeErr),
// left keys of (md.Undecoded), or keysExact doubted; nil if nothing is.
func explain(name, src string, decodeErr error, md toml.MetaData) error {
	loc := newLocator(src)
	if loc.err != nil {
		return decodeError(name, loc.err) // syntax
	}
	if err := checkStrict(loc.md, loc.root).first(name, loc); err != nil {
		return err
	}
	if decodeErr != nil {
		return decodeError(name, decodeErr)
	}
	if und := md.Undecoded(); len(und) > 0 {
		key := []string(und[0])
		line, _ := loc.line(key)
		return &Error{File: name, Line: line, Key: formatKey(key), Msg: oneLine("unknown key " + quoteKey(key))}
	}
	return nil
}

// decodeError turns an error of the toml package into an *Error.
func decodeError(name string, err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return &Error{File: name, Line: pe.Position.Line, Key: oneLine(pe.LastKey), Msg: oneLine(pe.Message), Err: err}
	}
	return &Error{File: name, Msg: oneLine(err.Error()), Err: err}
}
