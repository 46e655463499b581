package gresconf

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"gpuprep/lib/cpuset"
)

func mustParse(t *testing.T, text string) *Conf {
	t.Helper()
	g, err := Parse("gres.conf", []byte(text))
	if err != nil {
		t.Fatalf("Parse(%q): %v", text, err)
	}
	return g
}

func TestParseGresConfForms(t *testing.T) {
	gpu := func(file string) Device {
		return Device{Name: "gpu", File: file, Count: 1, Line: 1}
	}
	tests := []struct {
		name string
		text string
		want []Device
	}{
		{"one file", "Name=gpu File=/dev/nvidia0", []Device{gpu("/dev/nvidia0")}},
		{"range", "Name=gpu File=/dev/nvidia[0-2]",
			[]Device{gpu("/dev/nvidia0"), gpu("/dev/nvidia1"), gpu("/dev/nvidia2")}},
		{"range list", "Name=gpu File=/dev/nvidia[0,2-3]",
			[]Device{gpu("/dev/nvidia0"), gpu("/dev/nvidia2"), gpu("/dev/nvidia3")}},
		{"comma list", "Name=gpu File=/dev/nvidia0,/dev/nvidia3",
			[]Device{gpu("/dev/nvidia0"), gpu("/dev/nvidia3")}},
		{"Files alias", "Name=gpu Files=/dev/nvidia1", []Device{gpu("/dev/nvidia1")}},
		{"keys any case", "NAME=gpu fIlE=/dev/nvidia0", []Device{gpu("/dev/nvidia0")}},
		{"comment after value", "Name=gpu File=/dev/nvidia0 # the first one", []Device{gpu("/dev/nvidia0")}},
		{"comment glued to value", "Name=gpu File=/dev/nvidia0#x", []Device{gpu("/dev/nvidia0")}},
		{"spaces around =", "Name = gpu File= /dev/nvidia0", []Device{gpu("/dev/nvidia0")}},
		{"tabs", "Name=gpu\tFile=/dev/nvidia0\t", []Device{gpu("/dev/nvidia0")}},
		{"type and cores", "Name=gpu Type=h100 File=/dev/nvidia0 Cores=0-3,8-11",
			[]Device{{Name: "gpu", Type: "h100", File: "/dev/nvidia0", Cores: cpuset.MustParse("0-3,8-11"), HasCores: true, Count: 1, Line: 1}}},
		{"range shares type and cores", "Name=gpu Type=a100 File=/dev/nvidia[0-1] Cores=0-7",
			[]Device{
				{Name: "gpu", Type: "a100", File: "/dev/nvidia0", Cores: cpuset.MustParse("0-7"), HasCores: true, Count: 1, Line: 1},
				{Name: "gpu", Type: "a100", File: "/dev/nvidia1", Cores: cpuset.MustParse("0-7"), HasCores: true, Count: 1, Line: 1}}},
		{"links", "Name=gpu File=/dev/nvidia1 Links=18,-1,0,2",
			[]Device{{Name: "gpu", File: "/dev/nvidia1", Links: []int{18, -1, 0, 2}, Count: 1, Line: 1}}},
		{"Link alias", "Name=gpu File=/dev/nvidia0 Link=-1,4",
			[]Device{{Name: "gpu", File: "/dev/nvidia0", Links: []int{-1, 4}, Count: 1, Line: 1}}},
		{"multiple files", "Name=gpu Type=a100_3g.20gb MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap21,/dev/nvidia-caps/nvidia-cap22 Cores=0-15",
			[]Device{{Name: "gpu", Type: "a100_3g.20gb", MultipleFiles: []string{"/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap21", "/dev/nvidia-caps/nvidia-cap22"},
				Cores: cpuset.MustParse("0-15"), HasCores: true, Count: 1, Line: 1}}},
		{"multiple files with brackets", "Name=gpu MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap[147-148]",
			[]Device{{Name: "gpu", MultipleFiles: []string{"/dev/nvidia1", "/dev/nvidia-caps/nvidia-cap147", "/dev/nvidia-caps/nvidia-cap148"}, Count: 1, Line: 1}}},
		{"count only", "Name=bandwidth Type=lustre Count=4G Flags=CountOnly",
			[]Device{{Name: "bandwidth", Type: "lustre", Count: 4 << 30, Flags: []string{"CountOnly"}, Line: 1}}},
		{"count suffixes", "Name=x Count=2KB", []Device{{Name: "x", Count: 2000, Line: 1}}},
		{"count kib", "Name=x Count=3kib", []Device{{Name: "x", Count: 3072, Line: 1}}},
		{"count matching files", "Name=gpu File=/dev/nvidia[0-1] Count=2",
			[]Device{gpu("/dev/nvidia0"), gpu("/dev/nvidia1")}},
		{"mps count split over files", "Name=mps Count=200 File=/dev/nvidia[0-1]",
			[]Device{{Name: "mps", File: "/dev/nvidia0", Count: 100, Line: 1}, {Name: "mps", File: "/dev/nvidia1", Count: 100, Line: 1}}},
		{"shard", "Name=shard Count=8 File=/dev/nvidia0",
			[]Device{{Name: "shard", File: "/dev/nvidia0", Count: 8, Line: 1}}},
		{"flags", "Name=gpu File=/dev/nvidia0 Flags=nvidia_gpu_env,opencl_env",
			[]Device{{Name: "gpu", File: "/dev/nvidia0", Count: 1, Flags: []string{"nvidia_gpu_env", "opencl_env"}, Line: 1}}},
		{"quoted value", `Name=gpu Type="big gpu" File=/dev/nvidia0`,
			[]Device{{Name: "gpu", Type: "big gpu", File: "/dev/nvidia0", Count: 1, Line: 1}}},
		{"escaped hash", `Name=gpu Type=a\#b File=/dev/nvidia0`,
			[]Device{{Name: "gpu", Type: "a#b", File: "/dev/nvidia0", Count: 1, Line: 1}}},
		{"continuation", "Name=gpu \\\n  File=/dev/nvidia0 \\\n  Cores=0-1",
			[]Device{{Name: "gpu", File: "/dev/nvidia0", Cores: cpuset.MustParse("0-1"), HasCores: true, Count: 1, Line: 1}}},
		{"continuation with trailing space", "Name=gpu \\   \nFile=/dev/nvidia0", []Device{gpu("/dev/nvidia0")}},
		{"CRLF", "Name=gpu File=/dev/nvidia0\r\n", []Device{gpu("/dev/nvidia0")}},
		{"CRLF continuation", "Name=gpu \\\r\nFile=/dev/nvidia0\r\n", []Device{gpu("/dev/nvidia0")}},
		{"blank and space-only lines", "\n   \n\t\nName=gpu File=/dev/nvidia0\n\n",
			[]Device{{Name: "gpu", File: "/dev/nvidia0", Count: 1, Line: 4}}},
		{"cpus alias", "Name=gpu File=/dev/nvidia0 CPUs=0-1",
			[]Device{{Name: "gpu", File: "/dev/nvidia0", Cores: cpuset.MustParse("0-1"), HasCores: true, Count: 1, Line: 1}}},
		{"empty file", "", nil},
		{"only comments", "# nothing\n   # here\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := mustParse(t, tt.text)
			got := g.ForNode("anynode")
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ForNode:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseGresConfNodeName(t *testing.T) {
	g := mustParse(t, `AutoDetect=nvml
NodeName=tux[0-2] Name=gpu File=/dev/nvidia[0-3]
NodeName=tux3 AutoDetect=off Name=gpu File=/dev/nvidia[0,2-3]
NodeName=tux[4-15] Name=gpu File=/dev/nvidia[0-3]
NodeName=tux[8-11] AutoDetect=rsmi
Name=bandwidth Count=10
`)
	if g.AutoDetect != "nvml" {
		t.Errorf("AutoDetect = %q", g.AutoDetect)
	}
	count := func(host string) int { return len(g.ForNode(host)) }
	for host, want := range map[string]int{"tux0": 5, "tux2": 5, "tux3": 4, "tux15": 5, "tux16": 1, "tux03": 1, "other": 1} {
		if got := count(host); got != want {
			t.Errorf("ForNode(%q) has %d records, want %d", host, got, want)
		}
	}
	files := func(host string) (out []string) {
		for _, d := range g.ForNode(host) {
			out = append(out, d.File)
		}
		return out
	}
	if got := files("tux3"); !reflect.DeepEqual(got, []string{"/dev/nvidia0", "/dev/nvidia2", "/dev/nvidia3", ""}) {
		t.Errorf("tux3 files %q", got)
	}
	for host, want := range map[string]string{"tux3": "off", "tux9": "rsmi", "tux0": "nvml", "x": "nvml"} {
		got, err := g.AutoDetectFor(host)
		if err != nil || got != want {
			t.Errorf("AutoDetectFor(%q) = %q, %v; want %q", host, got, err, want)
		}
	}
	if len(g.Lines) != 5 || g.Lines[3].Name != "" || g.Lines[3].AutoDetect != "rsmi" {
		t.Errorf("lines: %+v", g.Lines)
	}
}

func TestAutoDetectConflict(t *testing.T) {
	g := mustParse(t, "NodeName=n[1-4] AutoDetect=nvml\nNodeName=n[3-5] AutoDetect=off\n")
	if _, err := g.AutoDetectFor("n3"); err == nil || err.Error() != "gres.conf:2: AutoDetect=off for n3 differs from AutoDetect=nvml on line 1" {
		t.Errorf("AutoDetectFor(n3) error = %v", err)
	}
	if m, err := g.AutoDetectFor("n5"); err != nil || m != "off" {
		t.Errorf("AutoDetectFor(n5) = %q, %v", m, err)
	}
	if m, err := g.AutoDetectFor("n9"); err != nil || m != "" {
		t.Errorf("AutoDetectFor(n9) = %q, %v", m, err)
	}
}

func TestParseGresConfBad(t *testing.T) {
	tests := []struct{ text, want string }{
		{"Name=gpu File=/dev/nvidia0 Links=1,x", `gres.conf:1: Links= value "1,x": not a number`},
		{"Name=gpu File=/dev/nvidia[3-1]", `gres.conf:1: File= value "/dev/nvidia[3-1]": range "3-1" is descending`},
		{"Name=gpu File=/dev/nvidia[0-3", `gres.conf:1: File= value "/dev/nvidia[0-3": unterminated '[' in "/dev/nvidia[0-3"`},
		{"NodeName=gpu[01-04 Name=gpu", `gres.conf:1: NodeName= value "gpu[01-04": unterminated '[' in "gpu[01-04"`},
		{"\n\nName=gpu Colour=red", "gres.conf:3: unknown key Colour="},
		{"Colour=red", "gres.conf:1: unknown key Colour="},
		{"Type=h100 Name=gpu", "gres.conf:1: a line must start with NodeName=, Name= or AutoDetect= (found Type=)"},
		{"Name=gpu NodeName=n1", "gres.conf:1: NodeName= must be the first key on its line"},
		{"AutoDetect=nvml Name=gpu", "gres.conf:1: a line that starts with AutoDetect= sets it for all nodes and may hold nothing else (found Name=); to combine, start the line with NodeName="},
		{"AutoDetect=cuda", `gres.conf:1: AutoDetect= value "cuda": not one of off, nvml, rsmi, oneapi, nrt, nvidia`},
		{"Include /etc/slurm/gres.d/a.conf", "gres.conf:1: Include is not supported: put the included lines in this file"},
		{"include\tother.conf", "gres.conf:1: Include is not supported: put the included lines in this file"},
		{"Name=gpu File=/dev/nvidia[0-1] Links=-1,0", "gres.conf:1: Links= on a line with 2 devices; Links= describes one device, so give each its own line"},
		{"Name=gpu Count=2 Links=-1,0", "gres.conf:1: Links= on a line with 2 devices; Links= describes one device, so give each its own line"},
		{"Name=gpu File=/dev/nvidia0 Links=0,0", `gres.conf:1: Links= value "0,0": no -1 marks the device itself`},
		{"Name=gpu File=/dev/nvidia0 Links=-1,-1", `gres.conf:1: Links= value "-1,-1": more than one -1`},
		{"Name=gpu File=/dev/nvidia0 Links=-1,1024", `gres.conf:1: Links= value "-1,1024": 1024 is out of range (-1 to 1023)`},
		{"Name=gpu File=/dev/nvidia0 Links=-1,,2", `gres.conf:1: Links= value "-1,,2": empty element 2`},
		{"Name=gpu File=/dev/nvidia0 Links=-2,-1", `gres.conf:1: Links= value "-2,-1": -2 is out of range (-1 to 1023)`},
		{"Name=gpu File=/dev/nvidia[0-1] Count=3", "gres.conf:1: Count=3 does not match the 2 files of File="},
		{"Name=gpu MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap3 Count=2", "gres.conf:1: Count=2 on a MultipleFiles= line, which is one device"},
		{"Name=gpu MultipleFiles=/dev/nvidia0", `gres.conf:1: MultipleFiles= value "/dev/nvidia0" names one file; use File=`},
		{"Name=gpu File=/dev/nvidia0 MultipleFiles=/dev/nvidia0,/dev/x", "gres.conf:1: File= and MultipleFiles= are mutually exclusive"},
		{"Name=gpu File=nvidia0", `gres.conf:1: File= value "nvidia0": "nvidia0" is not an absolute path`},
		{"Name=gpu File=/dev/nvidia[0-2000]", `gres.conf:1: File= value "/dev/nvidia[0-2000]": more than 1024 files`},
		{"Name=x Count=-1", `gres.conf:1: Count= value "-1": not a number`},
		{"Name=x Count=4X", `gres.conf:1: Count= value "4X": unknown suffix "X" (K, M, G, T, P)`},
		{"Name=x Count=99999999999999999999", `gres.conf:1: Count= value "99999999999999999999": too large`},
		{"Name=x Count=20000P", `gres.conf:1: Count= value "20000P": too large`},
		{"Name=gpu File=/dev/nvidia0 Cores=0-x", `gres.conf:1: Cores= value "0-x": cpu list "0-x": "x" is not a cpu id`},
		{"Name=gpu File=/dev/nvidia0 Cores=3-1", `gres.conf:1: Cores= value "3-1": cpu list "3-1": range "3-1" is descending`},
		{`Name=gpu File=/dev/nvidia0 Cores=""`, `gres.conf:1: Cores= value "": empty core list`},
		{"Name=gpu File=/dev/nvidia0 Flags=no_gpu_env,nvidia_gpu_env", `gres.conf:1: Flags= value "no_gpu_env,nvidia_gpu_env": no_gpu_env excludes nvidia_gpu_env`},
		{"Name=mps File=/dev/nvidia0 Flags=one_sharing,all_sharing", `gres.conf:1: Flags= value "one_sharing,all_sharing": one_sharing and all_sharing exclude each other`},
		{"NodeName=n1 Type=h100", "gres.conf:1: NodeName= line has neither Name= nor AutoDetect="},
		{`Name=""`, "gres.conf:1: Name= is empty"},
		{"Name=gpu File=", "gres.conf:1: File= has no value"},
		{"Name=gpu junk", `gres.conf:1: unexpected text "junk"`},
		{"Name=gpu =x", `gres.conf:1: unexpected text "=x"`},
		{"garbage", `gres.conf:1: unexpected text "garbage"`},
		{"Name=gpu\x00 File=/dev/nvidia0", "gres.conf:1: line contains a NUL byte"},
		{"Name=gpu \\\r\n\r\nFile=x\r\n", "gres.conf:3: a line must start with NodeName=, Name= or AutoDetect= (found File=)"},
		{`NodeName="" Name=gpu`, "gres.conf:1: NodeName= value is empty"},
	}
	for _, tt := range tests {
		_, err := Parse("gres.conf", []byte(tt.text))
		if err == nil {
			t.Errorf("Parse(%q): no error, want %q", tt.text, tt.want)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("Parse(%q):\n got %s\nwant %s", tt.text, err, tt.want)
		}
		var pe ParseError
		if !errors.As(err, &pe) || pe.File != "gres.conf" || pe.Line == 0 {
			t.Errorf("Parse(%q): error %#v is not a ParseError with a line", tt.text, err)
		}
	}
}

func TestParseGresConfWarnings(t *testing.T) {
	tests := []struct{ text, want string }{
		{"Name=gpu File=/dev/nvidia0 CPUs=0-3", "gres.conf:1: CPUs= is the old name of Cores=; it means Slurm's abstract core ids, not OS CPU ids"},
		{"Name=gpu File=/dev/nvidia0 \\", "gres.conf:1: line continues past the end of the file"},
		{"Name=gpu File=/dev/nvidia0 File=/dev/nvidia1", "gres.conf:1: File= given twice; Slurm uses the last"},
		{"Name=gpu File=/dev/nvidia0 Flags=CountOnly,fast", `gres.conf:1: Flags= value "CountOnly,fast": unknown flag "fast", ignored by Slurm`},
		{"Name=gpu AutoDetect=nvml File=/dev/nvidia0", "gres.conf:1: AutoDetect= on a line without NodeName= is ignored by Slurm; put it on a line of its own"},
		{"AutoDetect=nvml\nAutoDetect=off", "gres.conf:2: global AutoDetect=off replaces AutoDetect=nvml given earlier (Slurm keeps the last)"},
		{"Name=mps Count=3 File=/dev/nvidia[0-1]", "gres.conf:1: Count=3 is not a multiple of the 2 files; each file gets 1"},
		{"Name=gpu Count+=2", "gres.conf:1: Count+= is read as Count= (an operator means nothing in gres.conf)"},
		{"Name=gpu File=/dev/nvidia0 Cores=0 CPUs=1", "gres.conf:1: both Cores= and CPUs= given; Slurm uses Cores="},
		{"Name=gpu\\\nFile=/dev/nvidia0", `gres.conf:1: Name= value "gpuFile=/dev/nvidia0" holds '=': is a space missing before a continuation backslash?`},
		{"NodeName=n1 Name=gpu Type=h100\\\nFile=/dev/nvidia0", `gres.conf:1: Type= value "h100File=/dev/nvidia0" holds '=': is a space missing before a continuation backslash?`},
	}
	for _, tt := range tests {
		g := mustParse(t, tt.text)
		var got []string
		for _, w := range g.Warnings {
			got = append(got, w.Error())
		}
		found := false
		for _, w := range got {
			found = found || w == tt.want
		}
		if !found {
			t.Errorf("Parse(%q) warnings %q, want %q", tt.text, got, tt.want)
		}
	}
}

// TestParseGresConfSlurmQuirks pins behaviour copied from Slurm's parser
// that surprises people.
func TestParseGresConfSlurmQuirks(t *testing.T) {
	// A continuation joins lines with nothing in between.
	g := mustParse(t, "Name=gpu\\\nFile=/dev/nvidia0")
	if l := g.Lines[0]; l.Name != "gpuFile=/dev/nvidia0" || l.Files != nil {
		t.Errorf(`"Name=gpu\" + "File=..." should read as Name=gpuFile=/dev/nvidia0, got %+v`, l)
	}
	// A backslash inside a comment does not continue the line.
	g = mustParse(t, "Name=gpu File=/dev/nvidia0 # see below \\\nName=gpu File=/dev/nvidia1\n")
	if n := len(g.ForNode("x")); n != 2 {
		t.Errorf("comment backslash: %d records, want 2", n)
	}
	// An even number of trailing backslashes is no continuation.
	g = mustParse(t, "Name=gpu Type=a\\\\\nName=gpu\n")
	if len(g.Lines) != 2 || g.Lines[0].Type != `a\` {
		t.Errorf("even backslashes: %+v", g.Lines)
	}
	// Errors carry the first physical line of a continued line.
	_, err := Parse("g", []byte("\nName=gpu \\\n  Links=1,x\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "g:2: ") {
		t.Errorf("continued line error %v, want line 2", err)
	}
	// Later lines count physical lines.
	_, err = Parse("g", []byte("Name=gpu \\\n File=/dev/nvidia0\nName=gpu Colour=1\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "g:3: ") {
		t.Errorf("error after a continued line %v, want line 3", err)
	}
	// Name on a NodeName line is kept case as written; Count= on mps with
	// several files is shared out.
	g = mustParse(t, "NodeName=n1 Name=MPS Count=7 File=/dev/nvidia0\n")
	if d := g.ForNode("n1"); len(d) != 1 || d[0].Count != 7 || d[0].Name != "MPS" {
		t.Errorf("MPS: %+v", d)
	}
	// Name= twice on a Name= line: Slurm keeps the first.
	g = mustParse(t, "Name=gpu Name=mps File=/dev/nvidia0")
	if g.Lines[0].Name != "gpu" {
		t.Errorf("Name twice: %q", g.Lines[0].Name)
	}
	// NodeName line with only AutoDetect gives no records.
	g = mustParse(t, "NodeName=n1 AutoDetect=NVML")
	if len(g.ForNode("n1")) != 0 || g.Lines[0].AutoDetect != "nvml" {
		t.Errorf("AutoDetect-only line: %+v", g.Lines)
	}
}

func TestParseGresConfErrorFileName(t *testing.T) {
	_, err := Parse("/etc/slurm/gres.conf", []byte("\n\n\n\n\n\n\n\n\n\n\nName=gpu File=/dev/nvidia0 Links=1,x\n"))
	if err == nil || err.Error() != `/etc/slurm/gres.conf:12: Links= value "1,x": not a number` {
		t.Errorf("got %v", err)
	}
}

// TestParseErrorText: a problem of the whole file names no line.
func TestParseErrorText(t *testing.T) {
	if got := (ParseError{File: "gres.conf", Msg: "empty"}).Error(); got != "gres.conf: empty" {
		t.Errorf("line 0: %q", got)
	}
}
