package textfiledir

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gpuprep/internal/fakeproc"
	"gpuprep/lib/host"
)

func mkdir(t *testing.T, root, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestFind(t *testing.T) {
	type proc struct {
		pid, uid int
		exe, cmd string
	}
	for _, c := range []struct {
		name      string
		procs     []proc
		dirs      []string
		want, src string
		tried     []string // substrings of Result.Tried, in order
	}{
		{
			name:  "running node_exporter's flag wins over the defaults",
			procs: []proc{{812, 113, "/usr/local/bin/node_exporter", "node_exporter --collector.textfile.directory=/srv/textfile"}},
			dirs:  []string{"/srv/textfile", DebianDir, LegacyDir},
			want:  "/srv/textfile", src: "node_exporter process 812 (--collector.textfile.directory=/srv/textfile)",
		},
		{
			name:  "Debian's package, flag as two arguments",
			procs: []proc{{900, 110, "/usr/bin/prometheus-node-exporter", "/usr/bin/prometheus-node-exporter --collector.textfile.directory /var/lib/tf/"}},
			dirs:  []string{"/var/lib/tf"},
			want:  "/var/lib/tf", src: "prometheus-node-exporter process 900",
		},
		{
			name:  "Debian's package without the flag: its compiled-in default",
			procs: []proc{{900, 110, "/usr/bin/prometheus-node-exporter", "/usr/bin/prometheus-node-exporter"}},
			dirs:  []string{DebianDir, LegacyDir},
			want:  DebianDir, src: "Debian's compiled-in default",
		},
		{
			name: "no process, only the old default",
			dirs: []string{LegacyDir},
			want: LegacyDir, src: "the old default",
		},
		{
			name:  "a login user's node_exporter does not choose where root writes",
			procs: []proc{{500, 1001, "/home/eve/node_exporter", "node_exporter --collector.textfile.directory=/etc"}},
			dirs:  []string{"/etc", DebianDir},
			want:  DebianDir,
			tried: []string{"node_exporter process 500: ignored, runs as uid 1001"},
		},
		{
			name:  "a process only named like it on its command line is not it",
			procs: []proc{{501, 0, "/usr/bin/python3", "node_exporter --collector.textfile.directory=/etc"}},
			dirs:  []string{"/etc"},
			tried: []string{"running node_exporter: none found", DebianDir + ": absent", LegacyDir + ": absent"},
		},
		{
			name:  "the flag's directory missing here: the defaults, and why",
			procs: []proc{{700, 65534, "/bin/node_exporter", "/bin/node_exporter --collector.textfile.directory=/textfile"}},
			dirs:  []string{LegacyDir},
			want:  LegacyDir,
			tried: []string{"node_exporter process 700: --collector.textfile.directory=/textfile: absent", DebianDir + ": absent"},
		},
		{
			name:  "textfile collector off",
			procs: []proc{{700, 0, "/bin/node_exporter", "node_exporter --no-collector.textfile --collector.textfile.directory=/tf"}},
			dirs:  []string{"/tf"},
			tried: []string{"node_exporter process 700: textfile collector turned off"},
		},
		{
			name:  "nothing at all",
			tried: []string{"running node_exporter: none found", DebianDir + ": absent", LegacyDir + ": absent"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			mkdir(t, root, "/proc")
			for _, p := range c.procs {
				fakeproc.Add(t, root, p.pid, p.uid, p.exe, p.cmd, "0::/\n")
			}
			for _, d := range c.dirs {
				mkdir(t, root, d)
			}
			got := Find(host.NewRoot(root))
			if got.Dir != c.want || !strings.Contains(got.Source, c.src) {
				t.Fatalf("Find = %q from %q, want %q from %q (tried %q)", got.Dir, got.Source, c.want, c.src, got.Tried)
			}
			i := 0
			for _, tr := range got.Tried {
				if i < len(c.tried) && strings.Contains(tr, c.tried[i]) {
					i++
				}
			}
			if i < len(c.tried) {
				t.Errorf("Tried = %q, want entries containing %q in order", got.Tried, c.tried)
			}
		})
	}
}

// TestFindSkipsOddEntries: entries without an exe (kernel
// threads) or that vanish are passed over, and a file where the directory
// should be is not taken.
func TestFindSkipsOddEntries(t *testing.T) {
	root := t.TempDir()
	mkdir(t, root, "/proc/2")    // a kernel thread: no exe
	mkdir(t, root, "/proc/self") // not a pid
	mkdir(t, root, "/var/lib/prometheus")
	os.WriteFile(filepath.Join(root, DebianDir), nil, 0o644)
	got := Find(host.NewRoot(root))
	if got.Dir != "" || !slices.Contains(got.Tried, DebianDir+": not a directory") {
		t.Fatalf("%+v", got)
	}
}
