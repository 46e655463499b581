package textfiledir

import (
	"strings"
	"testing"
)

// args joins arguments as /proc/<pid>/cmdline does: each ended by a NUL.
func args(a ...string) []byte { return []byte(strings.Join(a, "\x00") + "\x00") }

func TestParseCmdline(t *testing.T) {
	for _, c := range []struct {
		name string
		in   []byte
		want Cmdline
	}{
		{"equals", args("/usr/bin/node_exporter", "--collector.textfile.directory=/srv/tf"), Cmdline{Dir: "/srv/tf"}},
		{"separate", args("node_exporter", "--web.listen-address=:9100", "--collector.textfile.directory", "/srv/tf", "--collector.systemd"), Cmdline{Dir: "/srv/tf"}},
		{"single dash (before 0.15)", args("node_exporter", "-collector.textfile.directory", "/old"), Cmdline{Dir: "/old"}},
		{"last wins", args("ne", "--collector.textfile.directory=/a", "--collector.textfile.directory=/b"), Cmdline{Dir: "/b"}},
		{"value with = and blanks", args("ne", "--collector.textfile.directory=/x=y z"), Cmdline{Dir: "/x=y z"}},
		{"no trailing NUL", []byte("ne\x00--collector.textfile.directory=/a"), Cmdline{Dir: "/a"}},
		{"absent", args("/usr/bin/prometheus-node-exporter"), Cmdline{}},
		{"empty value", args("ne", "--collector.textfile.directory="), Cmdline{}},
		{"flag last, no value", args("ne", "--collector.textfile.directory"), Cmdline{}},
		{"program name is not a flag", args("--collector.textfile.directory=/argv0"), Cmdline{}},
		{"after --", args("ne", "--", "--collector.textfile.directory=/pos"), Cmdline{}},
		{"similar flag", args("ne", "--collector.textfile.directoryx=/a", "--collector.textfile.directory.extra=/b"), Cmdline{}},
		{"turned off", args("ne", "--collector.textfile.directory=/a", "--no-collector.textfile"), Cmdline{Dir: "/a", Disabled: true}},
		{"turned off then on", args("ne", "--no-collector.textfile", "--collector.textfile", "--collector.textfile.directory=/a"), Cmdline{Dir: "/a"}},
		{"=false", args("ne", "--collector.textfile=false", "--collector.textfile.directory=/a"), Cmdline{Dir: "/a", Disabled: true}},
		{"defaults off", args("ne", "--collector.disable-defaults", "--collector.cpu", "--collector.textfile.directory=/a"), Cmdline{Dir: "/a", Disabled: true}},
		{"defaults off, textfile on", args("ne", "--collector.disable-defaults", "--collector.textfile", "--collector.textfile.directory=/a"), Cmdline{Dir: "/a"}},
		{"empty", nil, Cmdline{}},
	} {
		if got := ParseCmdline(c.in); got != c.want {
			t.Errorf("%s: ParseCmdline(%q) = %+v, want %+v", c.name, c.in, got, c.want)
		}
	}
}

// FuzzParseCmdline: any bytes parse without a panic, and a directory found
// is the value of a --collector.textfile.directory argument given there.
func FuzzParseCmdline(f *testing.F) {
	f.Add(args("ne", "--collector.textfile.directory", "/a"))
	f.Add(args("ne", "--collector.textfile.directory=/a", "--no-collector.textfile"))
	f.Add([]byte("\x00\x00--collector.textfile.directory\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c := ParseCmdline(b)
		if c.Dir == "" {
			return
		}
		s := "\x00" + string(b) + "\x00"
		if !strings.Contains(s, "\x00"+Flag+"="+c.Dir+"\x00") && !strings.Contains(s, "\x00"+Flag+"\x00"+c.Dir+"\x00") &&
			!strings.Contains(s, "\x00"+Flag[1:]+"\x00"+c.Dir+"\x00") && !strings.Contains(s, "\x00"+Flag[1:]+"="+c.Dir+"\x00") {
			t.Fatalf("Dir %q is not a flag value in %q", c.Dir, b)
		}
	})
}
