package gresconf

import (
	"fmt"
	"strings"

	"gpuprep/lib/plural"
	"gpuprep/lib/slurm"
)

// gresKeys are the keys a Name= or NodeName= line may hold after its first
// key (gres.c's _gres_options), by lower-case name. Files, Link and CPUs are
// Slurm's aliases of File, Links and Cores.
var gresKeys = map[string]string{
	"autodetect":    "AutoDetect",
	"count":         "Count",
	"cpus":          "CPUs",
	"cores":         "Cores",
	"file":          "File",
	"files":         "Files",
	"flags":         "Flags",
	"link":          "Link",
	"links":         "Links",
	"multiplefiles": "MultipleFiles",
	"name":          "Name",
	"type":          "Type",
}

// Parse parses gres.conf text. name is used in messages as given
// ("gres.conf:12: ..."). It returns the first error; things Slurm accepts
// but that look wrong are in the result's Warnings.
//
// The rules are Slurm 22.05's: keys are case-insensitive; each line starts
// with NodeName=, Name= or AutoDetect= (a global AutoDetect= stands alone on
// its line); values are case-sensitive. See the value parsers in
// values.go for what each key accepts.
func Parse(name string, data []byte) (*Conf, error) {
	g := &Conf{File: name}
	lines, warn, perr := logicalLines(data)
	if perr != nil {
		perr.File = name
		return nil, *perr
	}
	for _, w := range warn {
		w.File = name
		g.Warnings = append(g.Warnings, w)
	}
	p := &gresParser{g: g}
	for _, l := range lines {
		p.no = l.no
		if err := p.line(l.text); err != "" {
			return nil, ParseError{File: name, Line: l.no, Msg: err}
		}
	}
	return g, nil
}

type gresParser struct {
	g  *Conf
	no int
}

func (p *gresParser) warn(format string, args ...any) {
	p.g.Warnings = append(p.g.Warnings, ParseError{File: p.g.File, Line: p.no, Msg: fmt.Sprintf(format, args...)})
}

// line parses one logical line; it returns an error message or "".
func (p *gresParser) line(text string) string {
	if isInclude(text) {
		return "Include is not supported: put the included lines in this file"
	}
	kvs, bad := splitKeyValues(text)
	if bad != "" {
		return bad
	}
	if len(kvs) == 0 {
		return ""
	}
	for _, kv := range kvs {
		if kv.op != 0 {
			p.warn("%s%c= is read as %s= (an operator means nothing in gres.conf)", kv.key, kv.op, kv.key)
		}
	}
	first := kvs[0]
	switch strings.ToLower(first.key) {
	case "autodetect":
		if len(kvs) > 1 {
			return fmt.Sprintf("a line that starts with AutoDetect= sets it for all nodes and may hold nothing else (found %s=); to combine, start the line with NodeName=", kvs[1].key)
		}
		v, err := parseAutoDetect(first.value)
		if err != "" {
			return err
		}
		if p.g.AutoDetect != "" && p.g.AutoDetect != v {
			p.warn("global AutoDetect=%s replaces AutoDetect=%s given earlier (Slurm keeps the last)", v, p.g.AutoDetect)
		}
		p.g.AutoDetect = v
		return ""
	case "name", "nodename":
		l, err := p.gresLine(kvs)
		if err != "" {
			return err
		}
		p.g.Lines = append(p.g.Lines, l)
		return ""
	default:
		if _, ok := gresKeys[strings.ToLower(first.key)]; ok {
			return fmt.Sprintf("a line must start with NodeName=, Name= or AutoDetect= (found %s=)", first.key)
		}
		return fmt.Sprintf("unknown key %s=", first.key)
	}
}

// isInclude matches parse_config.c's include directive: "include" in any
// case, then white space, at the start of the line.
func isInclude(text string) bool {
	return len(text) > 7 && strings.EqualFold(text[:7], "include") && isSpace(text[7])
}

// gresLine builds a Line from a line whose first key is Name= or
// NodeName=, checking values in the order gres.c's _parse_gres_config does.
func (p *gresParser) gresLine(kvs []keyValue) (Line, string) {
	l := Line{LineNo: p.no}
	vals := map[string]string{} // canonical key -> value
	first := strings.ToLower(kvs[0].key)
	if err := p.gresFirstKey(&l, vals, first, kvs[0].value); err != "" {
		return l, err
	}
	if err := p.gresKeyValues(vals, first, kvs[1:]); err != "" {
		return l, err
	}
	if err := p.gresAutoDetect(&l, vals); err != "" {
		return l, err
	}
	name, hasName := vals["Name"]
	if !hasName {
		if l.AutoDetect == "" {
			return l, "NodeName= line has neither Name= nor AutoDetect="
		}
		if len(vals) > 1 {
			p.warn("keys on a NodeName= line without Name= are ignored by Slurm")
		}
		return l, ""
	}
	if name == "" {
		return l, "Name= is empty"
	}
	l.Name = name
	l.Type = vals["Type"]
	for _, step := range []func(*Line, map[string]string) string{
		p.gresCores, p.gresFiles, p.gresMultipleFiles, p.gresFlags, p.gresLinks, p.gresCount,
	} {
		if err := step(&l, vals); err != "" {
			return l, err
		}
	}
	return l, checkGresLinks(&l)
}

// gresFirstKey takes the line's first key: NodeName= into l, checked as a
// hostlist, or Name= into vals.
func (p *gresParser) gresFirstKey(l *Line, vals map[string]string, first, value string) string {
	if first != "nodename" {
		vals["Name"] = value
		if strings.Contains(value, "=") {
			p.warn("Name= value %s holds '=': is a space missing before a continuation backslash?", slurm.Quote(value))
		}
		return ""
	}
	h, err := slurm.ParseHostlist(value)
	if err != nil {
		return fmt.Sprintf("NodeName= value %s: %v", slurm.Quote(value), err)
	}
	if h.Len() == 0 {
		return "NodeName= value is empty"
	}
	l.NodeName = value
	return ""
}

// gresKeyValues puts the keys after the first into vals by canonical
// name, refusing unknown keys and warning of duplicates: Slurm keeps the
// first Name= of a Name= line, and the last of any other key.
func (p *gresParser) gresKeyValues(vals map[string]string, first string, kvs []keyValue) string {
	for _, kv := range kvs {
		lk := strings.ToLower(kv.key)
		canon, ok := gresKeys[lk]
		if !ok {
			if lk == "nodename" {
				return "NodeName= must be the first key on its line"
			}
			return fmt.Sprintf("unknown key %s=", kv.key)
		}
		if strings.Contains(kv.value, "=") {
			p.warn("%s= value %s holds '=': is a space missing before a continuation backslash?", canon, slurm.Quote(kv.value))
		}
		if old, dup := vals[canon]; dup {
			if canon == "Name" && first == "name" {
				p.warn("Name= given twice; Slurm uses the first (%s)", old)
				continue
			}
			p.warn("%s= given twice; Slurm uses the last", canon)
		}
		vals[canon] = kv.value
	}
	return ""
}

// pick is the key of main and its alias that vals holds, with its value,
// warning where it holds both (Slurm uses main); ok is false for neither.
func (p *gresParser) pick(vals map[string]string, main, alias string) (key, value string, ok bool) {
	if v, ok := vals[main]; ok {
		if _, both := vals[alias]; both {
			p.warn("both %s= and %s= given; Slurm uses %s=", main, alias, main)
		}
		return main, v, true
	}
	v, ok := vals[alias]
	return alias, v, ok
}

// gresAutoDetect checks AutoDetect=, set on l only on a NodeName= line.
func (p *gresParser) gresAutoDetect(l *Line, vals map[string]string) string {
	v, ok := vals["AutoDetect"]
	if !ok {
		return ""
	}
	ad, err := parseAutoDetect(v)
	if err != "" {
		return err
	}
	if l.NodeName == "" {
		p.warn("AutoDetect= on a line without NodeName= is ignored by Slurm; put it on a line of its own")
	} else {
		l.AutoDetect = ad
	}
	return ""
}

// gresCores parses Cores= (or its old name CPUs=) into l.
func (p *gresParser) gresCores(l *Line, vals map[string]string) string {
	key, v, ok := p.pick(vals, "Cores", "CPUs")
	if !ok {
		return ""
	}
	if key == "CPUs" {
		p.warn("CPUs= is the old name of Cores=; it means Slurm's abstract core ids, not OS CPU ids")
	}
	set, err := parseCores(v)
	if err != nil {
		return fmt.Sprintf("%s= value %s: %v", key, slurm.Quote(v), err)
	}
	l.Cores, l.HasCores = set, true
	return ""
}

// gresFiles parses File= (or Files=) into l.
func (p *gresParser) gresFiles(l *Line, vals map[string]string) string {
	key, v, ok := p.pick(vals, "File", "Files")
	if !ok {
		return ""
	}
	files, err := parseFiles(v)
	if err != nil {
		return fmt.Sprintf("%s= value %s: %v", key, slurm.Quote(v), err)
	}
	l.Files = files
	return ""
}

// gresMultipleFiles parses MultipleFiles= into l: at least two files, and
// never with File=.
func (p *gresParser) gresMultipleFiles(l *Line, vals map[string]string) string {
	v, ok := vals["MultipleFiles"]
	if !ok {
		return ""
	}
	if l.Files != nil {
		return "File= and MultipleFiles= are mutually exclusive"
	}
	files, err := parseFiles(v)
	if err != nil {
		return fmt.Sprintf("MultipleFiles= value %s: %v", slurm.Quote(v), err)
	}
	if len(files) < 2 {
		return fmt.Sprintf("MultipleFiles= value %s names one file; use File=", slurm.Quote(v))
	}
	l.MultipleFiles = files
	return ""
}

// gresFlags parses Flags= into l.
func (p *gresParser) gresFlags(l *Line, vals map[string]string) string {
	v, ok := vals["Flags"]
	if !ok {
		return ""
	}
	flags, warns, err := parseFlags(v)
	if err != "" {
		return fmt.Sprintf("Flags= value %s: %s", slurm.Quote(v), err)
	}
	for _, w := range warns {
		p.warn("Flags= value %s: %s", slurm.Quote(v), w)
	}
	l.Flags = flags
	return ""
}

// gresLinks parses Links= (or Link=) into l.
func (p *gresParser) gresLinks(l *Line, vals map[string]string) string {
	key, v, ok := p.pick(vals, "Links", "Link")
	if !ok {
		return ""
	}
	links, err := parseLinks(v)
	if err != "" {
		return fmt.Sprintf("%s= value %s: %s", key, slurm.Quote(v), err)
	}
	l.Links = links
	return ""
}

// gresCount sets l's Count: Count= where given, checked against the files,
// else one per file of File=, else 1.
func (p *gresParser) gresCount(l *Line, vals map[string]string) string {
	shared := IsShared(l.Name)
	switch {
	case l.MultipleFiles != nil:
		l.Count = 1
	case l.Files != nil:
		l.Count = uint64(len(l.Files))
	default:
		l.Count = 1
	}
	v, ok := vals["Count"]
	if !ok {
		return ""
	}
	n, err := parseCount(v)
	if err != "" {
		return fmt.Sprintf("Count= value %s: %s", slurm.Quote(v), err)
	}
	if (l.Files != nil || l.MultipleFiles != nil) && n != l.Count && !shared {
		if l.MultipleFiles != nil {
			return fmt.Sprintf("Count=%d on a MultipleFiles= line, which is one device", n)
		}
		return fmt.Sprintf("Count=%d does not match the %s of File=", n, plural.Count(len(l.Files), "file", "files"))
	}
	if shared && len(l.Files) > 1 && n%uint64(len(l.Files)) != 0 {
		p.warn("Count=%d is not a multiple of the %d files; each file gets %d", n, len(l.Files), n/uint64(len(l.Files)))
	}
	l.Count, l.HasCount = n, true
	return ""
}

// checkGresLinks refuses Links= on a line of more than one device: Links=
// describes one.
func checkGresLinks(l *Line) string {
	if l.Links == nil {
		return ""
	}
	devices := uint64(1)
	switch {
	case l.Files != nil:
		devices = uint64(len(l.Files))
	case l.MultipleFiles == nil && !IsShared(l.Name):
		devices = l.Count
	}
	if devices > 1 {
		return fmt.Sprintf("Links= on a line with %d devices; Links= describes one device, so give each its own line", devices)
	}
	return ""
}
