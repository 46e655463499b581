package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A configuration in UTF-16 or UTF-32 (by its byte order mark, whatever
// follows), or with a NUL byte, is refused on one line naming the file;
// a UTF-8 byte order mark is not.
func TestEncodingRefused(t *testing.T) {
	const good = "[profiles.default]\nvm_swappiness = 10\n"
	for _, c := range []struct{ data, want string }{
		{"\xff\xfe" + good, "site.toml: encoded as UTF-16 (it starts with a byte order mark): save it as UTF-8"},
		{"\xfe\xff" + good, "site.toml: encoded as UTF-16 (it starts with a byte order mark): save it as UTF-8"},
		{"\xff\xfe\x00\x00[\x00\x00\x00", "site.toml: encoded as UTF-32 (it starts with a byte order mark): save it as UTF-8"},
		{"\x00\x00\xfe\xff\x00\x00\x00[", "site.toml: encoded as UTF-32 (it starts with a byte order mark): save it as UTF-8"},
		{"\x00", "site.toml:1: a NUL byte: this is not UTF-8 text (UTF-16 or UTF-32 without a byte order mark, or binary); save it as UTF-8"},
		{good + "\n# x\x00", "site.toml:4: a NUL byte: this is not UTF-8 text (UTF-16 or UTF-32 without a byte order mark, or binary); save it as UTF-8"},
		{"\xef\xbb\xbf" + good, ""},
		{"\xfe" + good, "site.toml:1: invalid UTF-8 byte: 0xfe"}, // not a mark: the decoder's own error
	} {
		_, err := Parse("site.toml", []byte(c.data))
		if c.want == "" && err != nil || c.want != "" && (err == nil || err.Error() != c.want) {
			t.Errorf("Parse(%.12q) = %v, want %q", c.data, err, c.want)
		}
		var ce *Error
		if err != nil && !errors.As(err, &ce) {
			t.Errorf("Parse(%.12q): %T is not an *Error", c.data, err)
		}
	}
	// Load names the file as given.
	p := filepath.Join(t.TempDir(), "gpuprep.toml")
	if err := os.WriteFile(p, []byte("\xff\xfe"+good), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); err == nil || err.Error() != p+": encoded as UTF-16 (it starts with a byte order mark): save it as UTF-8" {
		t.Errorf("Load: %v", err)
	}
}
