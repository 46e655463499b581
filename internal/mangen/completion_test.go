package mangen

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Each program's completion, sourced in bash, completes its flags and the
// choices of a flag's value, as a user pressing Tab would get them.
func TestCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	for _, p := range Pages {
		if p.FlagSet == nil {
			continue
		}
		path, err := writeCompletion(p, dir)
		if err != nil {
			t.Fatal(err)
		}
		// complete LINE: what Tab offers after LINE (its last word).
		complete := func(line string) string {
			words := strings.Fields(line)
			if strings.HasSuffix(line, " ") {
				words = append(words, "")
			}
			script := `. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); ` + "_" + strings.NewReplacer("-", "_").Replace(p.Name) + `; printf '%s\n' "${COMPREPLY[@]}"`
			cmd := exec.Command(bash, append([]string{"-c", script, "bash", path}, words...)...)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %q: %v\n%s", p.Name, line, err, out)
			}
			return strings.TrimSpace(string(out))
		}
		if got := complete(p.Name + " --roo"); got != "--root" {
			t.Errorf("%s --roo<Tab>: %q, want --root", p.Name, got)
		}
		os.WriteFile(filepath.Join(dir, "site.toml"), nil, 0o644)
		if got := complete(p.Name + " --root si"); got != "site.toml" {
			t.Errorf("%s --root si<Tab>: %q, want the file site.toml", p.Name, got)
		}
		if p.FlagSet().Lookup("log-level") == nil {
			continue // srunwrap
		}
		if got := complete(p.Name + " --log-level d"); got != "debug" {
			t.Errorf("%s --log-level d<Tab>: %q, want debug", p.Name, got)
		}
	}
}
