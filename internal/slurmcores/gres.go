package slurmcores

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"gpuprep/internal/oracleroot"
	"gpuprep/lib/textfmt"
)

// GresInput is a node's configuration for SlurmdGres.
type GresInput struct {
	// Root is the fixture root whose CPUs slurmd's hwloc reads
	// (HWLOC_FSROOT): Cores= are checked against its cores.
	Root string
	// NodeLine is the node's slurm.conf NodeName= line, with Gres=;
	// comment lines ("# needs SlurmdParameters=...") are skipped.
	// slurmd runs as that node (-N).
	NodeLine string
	// GresConf is the gres.conf text, its device files under /dev.
	GresConf string
	// SlurmdParameters for slurm.conf, "" for none.
	SlurmdParameters string
	// GresTypes for slurm.conf, "" for "gpu" ("gpu,mps" for Name=mps).
	GresTypes string
}

// Gres is one GRES record as slurmd read it: a "Gres Name=..." line of
// `slurmd -G`, e.g.
//
//	Gres Name=gpu Type=h100 Count=1 Index=0 ID=7696487 File=/dev/nvidia0 Cores=0-55 CoreCnt=224 Links=-1,18 Flags=HAS_FILE,HAS_TYPE
//
// For a MultipleFiles= record File is the files joined with commas and
// Index the last one's minor. Type and Links are "" where slurmd prints
// "(null)"; Flags is "" before Slurm 24.11, which added it.
type Gres struct {
	Name, Type   string
	Count, Index int
	ID           string // the GRES plugin's id ("7696487" for gpu)
	File         string
	Cores        string
	CoreCnt      int
	Links        string
	Flags        string
	Line         string // the line, from "Gres "
}

// GresView is slurmd's reading of a gres.conf.
type GresView struct {
	GPUs []Gres
	// Messages are slurmd's error: and warning: lines (gres.conf and
	// slurm.conf disagreeing, bad Cores= or Links=), from "error:" or
	// "warning:", but those about the sandbox (sandboxNoise).
	Messages []string
	Log      string // all slurmd printed, device paths as in GresInput
}

// SlurmdGres runs slurmd (this machine's, or $GPUPREP_ORACLE_ROOT's) on
// in.Root with in.GresConf as its gres.conf and a slurm.conf holding
// GresTypes= (in.GresTypes, else gpu) and in.NodeLine: `slurmd -D -G -vv -f CONF -N NODE` in a
// temporary directory (see runSlurmdG), and returns the GRES it prints.
// The device files gres.conf names (/dev/nvidia<N>, /dev/nvidia-caps/
// nvidia-cap<N>; slurmd stats each) are made with mknod under that
// directory, which needs root, and gres.conf's paths point there; the
// paths returned are /dev ones again. A `fatal:` line, a failed run, or a
// device file of another name is an error.
func SlurmdGres(in GresInput) (GresView, error) {
	v, err := slurmdGres(in)
	if err != nil {
		return GresView{}, fmt.Errorf("slurmd -D -G with gres.conf on %s: %w", in.Root, err)
	}
	return v, nil
}

func slurmdGres(in GresInput) (GresView, error) {
	node, line, err := oracleNodeLine(in.NodeLine)
	if err != nil {
		return GresView{}, err
	}
	dir, err := slurmdDir()
	if err != nil {
		return GresView{}, err
	}
	defer os.RemoveAll(dir)
	work := oracleroot.Work(dir)
	gres, err := makeDevices(in.GresConf, dir, work)
	if err != nil {
		return GresView{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, "gres.conf"), []byte(gres), 0o600); err != nil {
		return GresView{}, err
	}
	// slurmd reads gres.conf from slurm.conf's folder.
	types := in.GresTypes
	if types == "" {
		types = "gpu"
	}
	conf := oracleConf(work, in.SlurmdParameters, []string{"GresTypes=" + types}, line)
	out, runErr := runSlurmdG(hwlocEnv(in.Root), dir, conf, node)
	out = strings.ReplaceAll(out, work+"/dev/", "/dev/")
	if err := fatalLine(out); err != nil {
		return GresView{}, err
	}
	if runErr != nil {
		return GresView{}, fmt.Errorf("%w: %s", runErr, textfmt.Clip(strings.TrimSpace(out), 2000))
	}
	gpus, err := ParseSlurmdG(out)
	if err != nil {
		return GresView{}, err
	}
	return GresView{GPUs: gpus, Messages: messages(out), Log: out}, nil
}

// oracleNodeLine returns the node's name and its slurm.conf line with
// NodeAddr=127.0.0.1 (slurmd -N then needs no name lookup).
func oracleNodeLine(text string) (string, string, error) {
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.Fields(l)
		node, ok := strings.CutPrefix(f[0], "NodeName=")
		if !ok || node == "" {
			return "", "", fmt.Errorf("node line %q: does not start with NodeName=", l)
		}
		var keep []string
		for _, kv := range f {
			if !strings.HasPrefix(kv, "NodeAddr=") {
				keep = append(keep, kv)
			}
		}
		return node, strings.Join(append(keep, "NodeAddr=127.0.0.1"), " "), nil
	}
	return "", "", fmt.Errorf("node line %q: no NodeName= line", text)
}

// devicePath is a device file of a gres.conf value (File=/dev/nvidia0,
// MultipleFiles=a,b).
var devicePath = regexp.MustCompile(`/dev/[^\s,]+`)

// deviceKinds are the device files makeDevices makes: the pattern and the
// character major (nvidia-caps' is dynamic on a real node; slurmd only
// records it).
var deviceKinds = []struct {
	re    *regexp.Regexp
	major uint32
}{
	{regexp.MustCompile(`^/dev/nvidia(\d+)$`), 195},
	{regexp.MustCompile(`^/dev/nvidia-caps/nvidia-cap(\d+)$`), 239},
}

// makeDevices makes, under dir/dev, the device files gres's lines name
// (comments aside) and returns gres with their paths as slurmd sees them
// (work/dev/...).
func makeDevices(gres, dir, work string) (string, error) {
	lines := strings.Split(gres, "\n")
	for i, l := range lines {
		body, comment := l, ""
		if j := strings.IndexByte(l, '#'); j >= 0 {
			body, comment = l[:j], l[j:]
		}
		var err error
		body = devicePath.ReplaceAllStringFunc(body, func(p string) string {
			if err == nil {
				err = mknodDevice(dir, p)
			}
			return work + p
		})
		if err != nil {
			return "", fmt.Errorf("gres.conf line %d: %w", i+1, err)
		}
		lines[i] = body + comment
	}
	return strings.Join(lines, "\n"), nil
}

// mknodDevice makes dir+path, a character device whose minor is the
// name's number.
func mknodDevice(dir, path string) error {
	for _, k := range deviceKinds {
		m := k.re.FindStringSubmatch(path)
		if m == nil {
			continue
		}
		minor, err := strconv.ParseUint(m[1], 10, 20)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		p := filepath.Join(dir, path)
		if _, err := os.Lstat(p); err == nil {
			return nil // named twice: a MIG device's parent GPU
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		dev := int(uint64(k.major&0xfff)<<8 | minor&0xff | (minor&^0xff)<<12)
		if err := syscall.Mknod(p, syscall.S_IFCHR|0o666, dev); err != nil {
			return fmt.Errorf("mknod %s c %d %d: %w (needs root)", p, k.major, minor, err)
		}
		return nil
	}
	return fmt.Errorf("%s: not a /dev/nvidia<N> or /dev/nvidia-caps/nvidia-cap<N> file", path)
}

// sandboxNoise are messages about where slurmd runs, not what it reads:
// 26.05 warns about cgroup v1 and cannot reset its memory limit in the
// read-only /sys/fs/cgroup oracleroot gives it.
var sandboxNoise = []string{
	"cgroup/v1 plugin is deprecated",
	"Read-only file system",
	"Cannot reset slurmd memory limits",
}

// messages are out's error: and warning: lines, from that word, but
// sandboxNoise.
func messages(out string) []string {
	var m []string
lines:
	for _, l := range strings.Split(out, "\n") {
		for _, n := range sandboxNoise {
			if strings.Contains(l, n) {
				continue lines
			}
		}
		low := strings.ToLower(l)
		for _, w := range []string{"error:", "warning:"} {
			if i := strings.Index(low, w); i >= 0 {
				m = append(m, strings.TrimSpace(l[i:]))
				break
			}
		}
	}
	return m
}

// ParseSlurmdG returns the "Gres Name=..." records of `slurmd -G` output,
// whatever precedes them on the line ("slurmd: " in 22.05, a
// "[timestamp] " in 26.05); other lines are ignored.
func ParseSlurmdG(out string) ([]Gres, error) {
	var gs []Gres
	for _, l := range strings.Split(out, "\n") {
		i := strings.Index(l, "Gres Name=")
		if i < 0 {
			continue
		}
		g := Gres{Line: strings.TrimSpace(l[i:])}
		for _, tok := range strings.Fields(l[i+len("Gres "):]) {
			k, v, ok := strings.Cut(tok, "=")
			if !ok {
				continue // "(null)" where 22.05 has no Links=
			}
			if v == "(null)" {
				v = ""
			}
			var err error
			switch k {
			case "Name":
				g.Name = v
			case "Type":
				g.Type = v
			case "Count":
				g.Count, err = strconv.Atoi(v)
			case "Index":
				g.Index, err = strconv.Atoi(v)
			case "ID":
				g.ID = v
			case "File":
				g.File = v
			case "Cores":
				g.Cores = v
			case "CoreCnt":
				g.CoreCnt, err = strconv.Atoi(v)
			case "Links":
				g.Links = v
			case "Flags":
				g.Flags = v
			}
			if err != nil {
				return nil, fmt.Errorf("slurmd -G line %q: %s: %w", g.Line, k, err)
			}
		}
		gs = append(gs, g)
	}
	return gs, nil
}

// RequireSlurmdGres is Require for SlurmdGres: RequireSlurmdRegistered,
// and root for mknod (under CI=true, not root fails the test).
func RequireSlurmdGres(t testing.TB) {
	t.Helper()
	RequireSlurmdRegistered(t)
	if uid := os.Geteuid(); uid != 0 {
		err := fmt.Errorf("slurmcores: SlurmdGres makes device files with mknod, which needs root (uid %d)", uid)
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v (CI=true: run the tests as root)", err)
		}
		t.Skip(err)
	}
}
