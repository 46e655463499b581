package config

import "bytes"

// DefaultsTOML returns the text of the built-in configuration
// (defaults.toml, embedded), for the gpuprep.toml(5) man page
// (internal/mangen), which shows each key's built-in value as written
// there. The caller may modify the copy.
func DefaultsTOML() []byte { return bytes.Clone(defaultsTOML) }
