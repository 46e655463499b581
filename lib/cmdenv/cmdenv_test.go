package cmdenv

import (
	"bytes"
	"testing"
)

// TestVersion: --version prints the program, the release and the commit it
// was built from on stdout and exits 0; a build without a commit (go run,
// go test) prints no empty "(commit )".
func TestVersion(t *testing.T) {
	defer func(v, c string) { Version, Commit = v, c }(Version, Commit)
	for _, tc := range []struct{ version, commit, want string }{
		{"0.1.0", "0123456789ab", "gpuprep-prolog 0.1.0 (commit 0123456789ab)\n"},
		{"0.1.0", "0123456789ab-dirty", "gpuprep-prolog 0.1.0 (commit 0123456789ab-dirty)\n"},
		{"dev", "", "gpuprep-prolog dev\n"},
	} {
		Version, Commit = tc.version, tc.commit
		var stdout, stderr bytes.Buffer
		fs := NewFlagSet("gpuprep-prolog", "usage: gpuprep-prolog", &stderr)
		version := fs.Bool("version", false, "print the version and exit")
		done, code := Parse(fs, version, []string{"--version"}, &stdout)
		if !done || code != ExitOK || stdout.String() != tc.want || stderr.Len() != 0 {
			t.Errorf("Version=%q Commit=%q: done=%v code=%d stdout=%q stderr=%q, want %q",
				tc.version, tc.commit, done, code, stdout.String(), stderr.String(), tc.want)
		}
	}
}
