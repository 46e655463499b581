package gresgen

import (
	"fmt"
	"slices"
	"strings"

	"gpuprep/lib/gresconf"
	"gpuprep/lib/slurm"
	"gpuprep/lib/textfmt"
	"gpuprep/lib/topo"
)

// Difference is one way an existing gres.conf disagrees with the hardware.
type Difference struct {
	Line int    `json:"line,omitempty"` // gres.conf line, 0 when the record is missing
	Msg  string `json:"msg"`
}

func (d Difference) String() string {
	if d.Line > 0 {
		return fmt.Sprintf("line %d: %s", d.Line, d.Msg)
	}
	return d.Msg
}

// Check compares the GPU records gres.conf gives this node with the generated
// ones, matching records by device file, and says each difference in plain
// words. Name=mps records are checked where [gres] mps_gpus marks GPUs
// (checkMPS); other Name= records are ignored. The slurm.conf read for
// Options.Slurmd is checked too: its NodeName= line for this node against
// the counts slurmd will register (checkNodeLine).
func Check(node *topo.Node, want *Result, conf *gresconf.Conf, opt Options) []Difference {
	diffs := append(checkGres(node, want, conf, opt), checkMPS(want, conf, opt)...)
	return append(diffs, checkNodeLine(want, opt)...)
}

// checkGres is Check's gres.conf part.
func checkGres(node *topo.Node, want *Result, conf *gresconf.Conf, opt Options) []Difference {
	name := opt.Name
	if name == "" {
		name = "gpu"
	}
	host := want.Node.NodeName
	if !conf.Names(host) && len(conf.NodeNames()) > 0 {
		return []Difference{{Msg: otherNodes(conf, host)}}
	}
	var diffs []Difference
	if ad, err := conf.AutoDetectFor(host); err == nil && ad != "" && ad != "off" {
		diffs = append(diffs, Difference{Msg: fmt.Sprintf("AutoDetect=%s: slurmd will also detect GPUs itself and may override these lines; use AutoDetect=off with a generated file", ad)})
	}
	have := map[string]gresconf.Device{}
	for _, d := range conf.ForNode(host) {
		if !strings.EqualFold(d.Name, name) {
			continue
		}
		key := strings.Join(d.DeviceFiles(), ",")
		if old, dup := have[key]; dup {
			diffs = append(diffs, Difference{Line: d.Line, Msg: fmt.Sprintf("%s is listed again (first on line %d)", key, old.Line)})
			continue
		}
		have[key] = d
	}
	seen := map[string]bool{}
	var found []finding
	for _, w := range want.Devices {
		key := w.Key()
		seen[key] = true
		h, ok := have[key]
		if !ok {
			diffs = append(diffs, Difference{Msg: fmt.Sprintf("%s is missing: want %s", describe(w), formatLine(w))})
			continue
		}
		add := func(problem string) { found = append(found, finding{w, h.Line, problem}) }
		if h.Type != w.Type {
			add(fmt.Sprintf("Type=%s, but the hardware gives Type=%s (map names in [gres] type_names)", orNone(h.Type), w.Type))
		}
		switch {
		case !h.HasCores:
			add(fmt.Sprintf("no Cores=; the GPU is local to cores %s (OS CPUs %s)", w.Cores, node.CPUsOfCores(w.Cores)))
		case !h.Cores.Equal(w.Cores):
			add(fmt.Sprintf("Cores=%s, but the GPU is local to cores %s (OS CPUs %s)%s", h.Cores, w.Cores, node.CPUsOfCores(w.Cores), osIDHint(node, h)))
		}
		if w.Links != nil && !slices.Equal(h.Links, w.Links) {
			if h.Links == nil {
				add("no Links=; NVLink counts are known (see the generated file)")
			} else {
				add(fmt.Sprintf("Links=%s, but NVLink counts are %s", textfmt.JoinInts(h.Links, ","), textfmt.JoinInts(w.Links, ",")))
			}
		}
	}
	diffs = append(diffs, group(found)...)
	var extra []gresconf.Device
	for key, h := range have {
		if !seen[key] {
			extra = append(extra, h)
		}
	}
	slices.SortFunc(extra, func(a, b gresconf.Device) int { return a.Line - b.Line })
	for _, h := range extra {
		diffs = append(diffs, Difference{Line: h.Line, Msg: fmt.Sprintf("%s is not a GPU device of this node", strings.Join(h.DeviceFiles(), ","))})
	}
	return diffs
}

// otherNodes explains a gres.conf none of whose lines is for this node, in
// place of one "missing" line per GPU: the NodeName= values it has, the
// name this node goes by, and the flag that picks another, with the name to
// give it when the file names this node by its full (or short) name.
func otherNodes(conf *gresconf.Conf, host string) string {
	names := conf.NodeNames()
	msg := fmt.Sprintf("no line of %s is for this node %q: its NodeName= values are %s", conf.File, host, joinMax(names, 5))
	if alias := aliasOf(names, host); alias != "" {
		return msg + fmt.Sprintf("; the file names it %q: run with --node-name %s", alias, alias)
	}
	return msg + "; run with --node-name NAME, NAME being what slurm.conf calls this node"
}

// aliasOf finds a name in the host lists that is host's full name
// ("dgx01.example.com" for "dgx01") or its short one; "" when none is. Host
// lists of over 10,000 names are not expanded.
func aliasOf(hostlists []string, host string) string {
	short, _, _ := strings.Cut(host, ".")
	for _, expr := range hostlists {
		hl, err := slurm.ParseHostlist(expr)
		if err != nil || hl.Len() > 10000 {
			continue
		}
		for _, n := range hl.Expand() {
			if s, _, _ := strings.Cut(n, "."); s == short && n != host {
				return n
			}
		}
	}
	return ""
}

// finding is one problem of one record, before records with the same
// problem are reported together.
type finding struct {
	dev     Device
	line    int
	problem string
}

// group reports records that share a problem on one line ("GPUs 0, 1, 2
// (lines 9, 10): ..."), in the order problems were first found.
func group(found []finding) []Difference {
	var order []string
	by := map[string][]finding{}
	for _, f := range found {
		if _, ok := by[f.problem]; !ok {
			order = append(order, f.problem)
		}
		by[f.problem] = append(by[f.problem], f)
	}
	var out []Difference
	for _, p := range order {
		fs := by[p]
		if len(fs) == 1 {
			out = append(out, Difference{Line: fs[0].line, Msg: describe(fs[0].dev) + ": " + p})
			continue
		}
		var who, lines []string
		for _, f := range fs {
			who = append(who, shortName(f.dev))
			if l := fmt.Sprint(f.line); !slices.Contains(lines, l) {
				lines = append(lines, l)
			}
		}
		where := "line " + lines[0]
		if len(lines) > 1 {
			where = "lines " + strings.Join(lines, ", ")
		}
		out = append(out, Difference{Msg: fmt.Sprintf("%s: GPUs %s: %s", where, strings.Join(who, ", "), p)})
	}
	return out
}

func shortName(d Device) string {
	if d.MIG != "" {
		return fmt.Sprintf("%d %s", d.GPUIndex, d.MIG)
	}
	return fmt.Sprintf("%d (%s)", d.GPUIndex, d.File)
}

func describe(d Device) string {
	if d.MIG != "" {
		return fmt.Sprintf("MIG device %s of GPU %d (%s)", d.MIG, d.GPUIndex, d.BusID)
	}
	return fmt.Sprintf("GPU %d (%s, %s)", d.GPUIndex, d.BusID, d.File)
}

// osIDHint explains the classic mistake of writing OS CPU ids in Cores=.
func osIDHint(node *topo.Node, h gresconf.Device) string {
	if h.Cores.Max() >= len(node.Cores) {
		return "; Cores= names ids beyond the node's " + fmt.Sprint(len(node.Cores)) + " cores: these look like OS CPU ids, but Cores= takes Slurm core ids"
	}
	return ""
}

func formatLine(d Device) string {
	s := fmt.Sprintf("Name=%s Type=%s", d.Name, d.Type)
	if d.File != "" {
		s += " File=" + d.File
	} else {
		s += " MultipleFiles=" + strings.Join(d.MultipleFiles, ",")
	}
	s += " Cores=" + d.Cores.String()
	if d.Links != nil {
		s += " Links=" + textfmt.JoinInts(d.Links, ",")
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
