package hookcmd

import (
	"os"
	"path/filepath"
	"testing"
	"unicode/utf16"

	"gpuprep/internal/testroot"
)

// goodConfig is a configuration the prolog runs with in a test.
const goodConfig = "[general]\nlog_file = \"\"\nmetrics_dir = \"\"\n"

// utf16le is s in UTF-16, little-endian, after the byte order mark.
func utf16le(s string) string {
	b := []byte{0xff, 0xfe}
	for _, u := range utf16.Encode([]rune(s)) {
		b = append(b, byte(u), byte(u>>8))
	}
	return string(b)
}

// utf32 is s in UTF-32 after its byte order mark, little- or big-endian.
func utf32(s string, little bool) string {
	var b []byte
	for _, r := range "\ufeff" + s {
		u := uint32(r)
		if little {
			b = append(b, byte(u), byte(u>>8), byte(u>>16), byte(u>>24))
		} else {
			b = append(b, byte(u>>24), byte(u>>16), byte(u>>8), byte(u))
		}
	}
	return string(b)
}

// A configuration that is not UTF-8 text is refused by gpuprep-prolog
// --check-config and by the prolog of a job, on one stderr line naming the
// file and the encoding, with exit 2 (bad input, the path any bad
// configuration takes): a UTF-16 or UTF-32 byte order mark, whatever
// follows it (BurntSushi/toml skips \xff\xfe and \xfe\xff and reads on),
// and a NUL byte anywhere. A UTF-8 byte order mark is accepted, as the
// TOML decoder accepts it.
func TestConfigEncodingRefused(t *testing.T) {
	dir := t.TempDir()
	root := testroot.Shared(t, "h200x2")
	env := map[string]string{"SLURM_JOB_ID": "42", "SLURM_JOB_USER": "bob", "SLURM_SCRIPT_CONTEXT": "prolog_slurmd"}
	spool := filepath.Join(dir, "spool")
	os.Mkdir(spool, 0o700)
	for _, c := range []struct{ name, data, want string }{
		{"utf16le-bom-then-utf8", "\xff\xfe" + goodConfig, ": encoded as UTF-16 (it starts with a byte order mark): save it as UTF-8"},
		{"utf16be-bom-then-utf8", "\xfe\xff" + goodConfig, ": encoded as UTF-16 (it starts with a byte order mark): save it as UTF-8"},
		{"utf16le", utf16le(goodConfig), ": encoded as UTF-16 (it starts with a byte order mark): save it as UTF-8"},
		{"utf32le", utf32(goodConfig, true), ": encoded as UTF-32 (it starts with a byte order mark): save it as UTF-8"},
		{"utf32be", utf32(goodConfig, false), ": encoded as UTF-32 (it starts with a byte order mark): save it as UTF-8"},
		{"nul", goodConfig + "# a comment\x00\n", ":4: a NUL byte: this is not UTF-8 text (UTF-16 or UTF-32 without a byte order mark, or binary); save it as UTF-8"},
		{"utf8-bom", "\xef\xbb\xbf" + goodConfig, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := filepath.Join(dir, c.name+".toml")
			if err := os.WriteFile(cfg, []byte(c.data), 0o644); err != nil {
				t.Fatal(err)
			}
			base := []string{"--root", root, "--gpu-backend", "procfs", "--config", cfg}
			for _, args := range [][]string{{"--check-config"}, {"--state-dir", spool}} {
				code, _, stderr := mainRun("prolog", env, append(base, args...)...)
				if c.want == "" {
					if code != 0 {
						t.Errorf("%v: exit %d, stderr %q: want it accepted", args, code, stderr)
					}
					continue
				}
				want := "gpuprep-prolog: " + cfg + c.want + "\n"
				if code != 2 || stderr != want {
					t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", args, code, stderr, want)
				}
			}
		})
	}
}
