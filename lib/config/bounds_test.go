package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDeepNestingRefusedBeforeDecoding: thousands of nested inline tables
// or arrays are refused by the pre-scan, before the TOML decoder sees them
// (it took 43 s for 8,000 tables, outside the hooks' deadline), with one
// line naming the file and the line. The message is the pre-scan's own, so
// the test tells which refused the file without timing it.
func TestDeepNestingRefusedBeforeDecoding(t *testing.T) {
	n := 8000
	tables := "[gres]\nname = " + strings.Repeat("{a = ", n) + "1" + strings.Repeat("}", n) + "\n"
	arrays := "# [[[[ in a comment\n[general]\nx = \"[[[[[\"\ny = '''\n[[[[\n'''\nz = " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n"
	for name, src := range map[string]string{"tables": tables, "arrays": arrays} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), name+".toml")
			os.WriteFile(p, []byte(src), 0o644)
			_, err := Load(p)
			line := "2"
			if name == "arrays" {
				line = "7"
			}
			if err == nil || !strings.HasPrefix(err.Error(), p+":"+line+": { and [ nested deeper than 32 levels") || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %v, want %s:%s: nested deeper", err, p, line)
			}
		})
	}
}

// TestNestingCountsOnlyBrackets: brackets in strings and comments do not
// count, and ordinary tables, arrays of tables and inline tables pass.
func TestNestingCountsOnlyBrackets(t *testing.T) {
	deep := strings.Repeat("[", 40)
	for _, src := range []string{
		"a = \"" + deep + "\"\n",
		"a = '" + deep + "'\n",
		"a = \"\"\"\n" + deep + "\n\"\"\"\n",
		"a = '''" + deep + "''''\n",
		"a = \"\\\"" + deep + "\"\n",
		"# " + deep + "\n",
		"[[a.b]]\nc = [[1, 2], [3, {d = [4]}]]\n",
		"a = " + strings.Repeat("[", maxNesting) + strings.Repeat("]", maxNesting) + "\n",
	} {
		if err := checkNesting("x.toml", []byte(src)); err != nil {
			t.Errorf("%q: %v", src, err)
		}
	}
	over := "a = " + strings.Repeat("[", maxNesting+1) + strings.Repeat("]", maxNesting+1) + "\n"
	if err := checkNesting("x.toml", []byte(over)); err == nil {
		t.Errorf("%d levels passed", maxNesting+1)
	}
}

// TestParseBounded: Parse itself refuses more than 1 MiB, whoever read it.
func TestParseBounded(t *testing.T) {
	if _, err := Parse("big.toml", make([]byte, maxFileSize+1)); err == nil || err.Error() != "big.toml: larger than 1048576 bytes" {
		t.Errorf("big: %v", err)
	}
}

// TestLoadRefusesSpecialFiles: a FIFO (which would block the read) and
// /dev/zero (which never ends) are refused at once.
func TestLoadRefusesSpecialFiles(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo.toml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip(err)
	}
	for _, p := range []string{fifo, "/dev/zero"} {
		done := make(chan error, 1)
		go func() { _, err := Load(p); done <- err }()
		select {
		case err := <-done:
			if err == nil || err.Error() != p+": cannot read: not a regular file" {
				t.Errorf("%s: %v", p, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: Load hangs", p)
		}
	}
}
