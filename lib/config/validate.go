package config

import (
	"errors"
	"maps"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gpuprep/lib/slurm"
	"gpuprep/lib/suggest"
)

// Limits on values.
const (
	maxMIGIndex      = 63
	minDeadline      = 100 * time.Millisecond
	maxDeadline      = time.Hour
	maxDeadJobGrace  = 24 * time.Hour
	minMaxJobAge     = time.Hour
	maxProfileName   = 64
	profileNameRules = "letters, digits, _ and -, starting with a letter or digit, at most 64"
)

var (
	// profileNameRE: a name users type in --comment and that must also be a
	// valid Slurm node feature after constraint_prefix.
	profileNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)
	// wordRE: GRES names and types, constraint prefixes, comment keys.
	wordRE       = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
	gresNameRE   = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	migProfileRE = regexp.MustCompile(`^([1-9]c\.)?[1-9]g\.[0-9]+gb([+-][a-z][a-z.]*)*$`)
	// migSelectorRE: a GPU type, or a model as NVML names it ("NVIDIA
	// H100 80GB HBM3").
	migSelectorRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9 ._()-]*$`)
	backendMockRE = regexp.MustCompile(`^mock:[a-z0-9_-]+$`)
	logLevels     = []string{"debug", "info", "warn", "error"}
	backends      = []string{"auto", "nvml", "procfs", "none"} // or mock:<name>
)

// validate checks values, and references between sections, of a decoded
// configuration.
func validate(c *Config) problems {
	var ps problems
	checkGeneral(&c.General, &ps)
	checkSelection(c, &ps)
	checkGres(&c.Gres, &ps)
	checkMIG(&c.MIG, &ps)
	checkHealth(&c.Health, c.General.Deadline, &ps)
	checkIsolation(&c.Isolation, &ps)
	checkEvidence(&c.Evidence, &ps)
	checkSrunwrap(&c.Srunwrap, &ps)
	checkNCCL(&c.NCCL, &ps)
	checkKnobs(c.Defaults, knobsType, []string{"defaults"}, &ps)
	for _, name := range c.ProfileNames() {
		checkProfile(c, name, &ps)
	}
	return ps
}

func checkGeneral(g *GeneralSection, ps *problems) {
	k := func(name string) []string { return []string{"general", name} }
	checkPath(k("state_dir"), g.StateDir, false, ps)
	checkPath(k("log_file"), g.LogFile, true, ps)
	checkMetricsDir(k("metrics_dir"), g.MetricsDir, ps)
	checkOneOf(k("log_level"), g.LogLevel, logLevels, ps)
	if g.Deadline < minDeadline || g.Deadline > maxDeadline {
		ps.add(k("deadline"), "%s = %q: must be %s..%s", formatKey(k("deadline")), g.Deadline, minDeadline, maxDeadline)
	}
	if g.DeadJobGrace > maxDeadJobGrace {
		ps.add(k("dead_job_grace"), "%s = %q: must be 0s..%s", formatKey(k("dead_job_grace")), g.DeadJobGrace, maxDeadJobGrace)
	}
	if g.MaxJobAge != 0 && g.MaxJobAge < minMaxJobAge {
		ps.add(k("max_job_age"), "%s = %q: must be 0s (off) or at least %s (longer than any job may run)", formatKey(k("max_job_age")), g.MaxJobAge, minMaxJobAge)
	}
	if !slices.Contains(backends, g.GPUBackend) && !backendMockRE.MatchString(g.GPUBackend) {
		ps.add(k("gpu_backend"), "%s = %q: must be one of %s, mock:<name>%s", formatKey(k("gpu_backend")), g.GPUBackend, strings.Join(backends, ", "), suggest.DidYouMean(g.GPUBackend, backends))
	}
}

// MetricsDirAuto is general.metrics_dir's value that has the hooks find
// node_exporter's textfile directory at each run (lib/textfiledir).
const MetricsDirAuto = "auto"

// checkMetricsDir accepts general.metrics_dir = "auto", "" (no metrics) or
// an absolute path other than /.
func checkMetricsDir(key []string, v string, ps *problems) {
	switch {
	case v == MetricsDirAuto || v == "":
	case !filepath.IsAbs(v) || strings.ContainsRune(v, 0):
		ps.add(key, "%s = %q: must be \"auto\", \"\" (no metrics) or an absolute path", formatKey(key), v)
	default:
		checkPath(key, v, false, ps)
	}
}

func checkSelection(c *Config, ps *problems) {
	s := &c.Selection
	k := func(name string) []string { return []string{"selection", name} }
	if _, ok := c.Profiles[s.DefaultProfile]; !ok {
		ps.add(k("default_profile"), "%s = %q: no such profile (defined: %s)", formatKey(k("default_profile")), s.DefaultProfile, strings.Join(c.ProfileNames(), ", "))
	}
	for _, n := range s.AllowedProfiles {
		if _, ok := c.Profiles[n]; !ok && n != "*" {
			ps.add(k("allowed_profiles"), "%s: %q: no such profile (defined: %s; \"*\" allows all)", formatKey(k("allowed_profiles")), n, strings.Join(c.ProfileNames(), ", "))
		}
	}
	checkOneOf(k("unfit_profile"), s.UnfitProfile, []string{UnfitDefault, UnfitDrop, UnfitFail}, ps)
	for _, name := range []string{"constraint_prefix", "comment_key"} {
		v := s.ConstraintPrefix
		if name == "comment_key" {
			v = s.CommentKey
		}
		if v != "" && !wordRE.MatchString(v) {
			ps.add(k(name), "%s = %q: may hold only letters, digits, _, . and -", formatKey(k(name)), v)
		}
	}
}

func checkGres(g *GresSection, ps *problems) {
	if !gresNameRE.MatchString(g.Name) {
		ps.add([]string{"gres", "name"}, "gres.name = %q: must be lower-case letters, digits and _ (Slurm's GresTypes name, usually \"gpu\")", g.Name)
	}
	if g.Conf != "auto" && !strings.HasPrefix(g.Conf, "/") {
		ps.add([]string{"gres", "conf"}, "gres.conf = %q: must be \"auto\" or an absolute path", g.Conf)
	}
	seen := map[string]string{}
	for _, from := range slices.Sorted(maps.Keys(g.TypeNames)) {
		key := []string{"gres", "type_names", from}
		to := g.TypeNames[from]
		if !wordRE.MatchString(from) {
			ps.add(key, "%s: the type name may hold only letters, digits, _, . and -", formatKey(key))
		}
		if !wordRE.MatchString(to) {
			ps.add(key, "%s = %q: a gres.conf Type may hold only letters, digits, _, . and -", formatKey(key), to)
		}
		if prev, dup := seen[strings.ToLower(from)]; dup {
			ps.add(key, "%s: same type as %q (types match case-insensitively)", formatKey(key), prev)
		}
		seen[strings.ToLower(from)] = from
	}
	checkGresMPS(g, ps)
}

func checkMIG(m *MIGSection, ps *problems) {
	checkMIGLayouts(m.Layout, []string{"mig", "layout"}, ps)
	for _, expr := range slices.Sorted(maps.Keys(m.Nodes)) {
		key := []string{"mig", "nodes", expr}
		if _, err := slurm.ParseHostlist(expr); err != nil {
			ps.add(key, "%s: not a hostlist expression: %v", formatKey(key), err)
		}
		checkMIGLayouts(m.Nodes[expr].Layout, append(key, "layout"), ps)
	}
	for _, kind := range []string{"partitions", "requests"} {
		scopes := m.Partitions
		if kind == "requests" {
			scopes = m.Requests
		}
		for _, name := range slices.Sorted(maps.Keys(scopes)) {
			key := []string{"mig", kind, name}
			if !wordRE.MatchString(name) {
				ps.add(key, "%s: the name must be letters, digits, '-', '_' or '.'", formatKey(key))
			}
			checkMIGLayouts(scopes[name].Layout, append(key, "layout"), ps)
		}
	}
}

// checkMIGLayouts checks one table of layouts: its selectors and profile
// names.
func checkMIGLayouts(layouts map[string]MIGLayout, at []string, ps *problems) {
	for _, sel := range slices.Sorted(maps.Keys(layouts)) {
		key := append(append([]string(nil), at...), sel)
		if n, err := strconv.Atoi(sel); err == nil {
			if n < 0 || n > maxMIGIndex {
				ps.add(key, "%s: a GPU index must be 0..%d", formatKey(key), maxMIGIndex)
			}
		} else if !migSelectorRE.MatchString(sel) {
			ps.add(key, "%s: the selector must be a GPU index, a GPU model, a GPU type or \"all\"", formatKey(key))
		}
		for _, dev := range layouts[sel] {
			if !migProfileRE.MatchString(dev) {
				ps.add(key, "%s: %q is not a MIG profile name such as \"3g.40gb\", \"1c.3g.40gb\" or \"1g.10gb+me\"", formatKey(key), dev)
			}
		}
	}
}

// unitPatternRE: a systemd unit name or a path.Match pattern of one.
var unitPatternRE = regexp.MustCompile(`^[A-Za-z0-9:_.@\\*?\[\]-]+$`)

func checkIsolation(s *IsolationSection, ps *problems) {
	key := []string{"isolation", "exclude"}
	for _, u := range s.Exclude {
		if _, err := path.Match(u, ""); err != nil || !unitPatternRE.MatchString(u) || u == "." || u == ".." {
			ps.add(key, "%s: %q is not a unit name or pattern such as \"munge.service\" or \"docker-*.scope\"", formatKey(key), u)
		}
	}
	if s.IRQs {
		key := []string{"isolation", "irqs"}
		ps.add(key, "%s = true: interrupts are placed by the profile knob irq_affinity = true (shared by the jobs on the node, with housekeeping_cpus from the same profile); remove irqs from [isolation]", formatKey(key))
	}
}

// maxKeepDays and maxKeepMB bound [evidence]'s retention: ten years, 1 TiB.
const (
	maxKeepDays = 3650
	maxKeepMB   = 1 << 20
)

func checkEvidence(s *EvidenceSection, ps *problems) {
	if k := []string{"evidence", "keep_days"}; s.KeepDays < 0 || s.KeepDays > maxKeepDays {
		ps.add(k, "%s = %d: want 0 (kept whatever their age) to %d days", formatKey(k), s.KeepDays, maxKeepDays)
	}
	if k := []string{"evidence", "keep_mb"}; s.KeepMB < 0 || s.KeepMB > maxKeepMB {
		ps.add(k, "%s = %d: want 0 (no bound) to %d MiB", formatKey(k), s.KeepMB, maxKeepMB)
	}
}

func checkProfile(c *Config, name string, ps *problems) {
	spec := c.Profiles[name]
	base := []string{"profiles", name}
	at := func(k ...string) []string { return append(append([]string(nil), base...), k...) }
	if len(name) > maxProfileName || !profileNameRE.MatchString(name) {
		ps.add(base, "profile name %s: must be %s", formatKey([]string{name}), profileNameRules)
	}
	checkKnobs(spec.Knobs, profileSpecType, base, ps)
	checkKnobs(spec.Invariants, knobsType, at("invariants"), ps)
	for _, r := range spec.Required {
		if !IsKnob(r) {
			ps.add(at("required"), "%s: %q is not a knob%s", formatKey(at("required")), r, suggest.DidYouMean(r, KnobNames()))
		}
	}
	p, err := c.Profile(name)
	var cyc *cycleError
	var par *parentError
	switch {
	case errors.As(err, &cyc):
		ps.add(at("inherits"), "%s = %q: %s", formatKey(at("inherits")), spec.Inherits, cyc)
		return
	case errors.As(err, &par):
		// Reported once, at the profile that names the missing parent.
		if par.child == name {
			ps.add(at("inherits"), "%s = %q: no such profile (defined: %s)", formatKey(at("inherits")), par.parent, strings.Join(c.ProfileNames(), ", "))
		}
		return
	case err != nil:
		ps.add(base, "%s: %v", formatKey(base), err)
		return
	}
	for _, r := range p.Required {
		if IsKnob(r) && !p.IsSet(r) {
			ps.add(at("required"), "%s: %q is required but profile %q does not set it", formatKey(at("required")), r, name)
		}
	}
	// Both are plain integers once decoded.
	ds, dok := p.Setting("vm_dirty_ratio")
	bs, bok := p.Setting("vm_dirty_background_ratio")
	d, _ := strconv.Atoi(ds)
	b, _ := strconv.Atoi(bs)
	if dok && bok && d > 0 && b >= d {
		ps.add(at("vm_dirty_background_ratio"), "%s = %d: must be below vm_dirty_ratio (%d)", formatKey(at("vm_dirty_background_ratio")), b, d)
	}
}

// checkKnobs reports the bad keys of k, a table of type t (Knobs or
// ProfileSpec) at path. The knobs' values were checked as they were decoded
// (lib/knob's Def.Decode); what is left here are the rules between knobs.
func checkKnobs(k Knobs, t reflect.Type, path []string, ps *problems) {
	for _, p := range k.bad {
		p.report(t, path, ps)
	}
}

func checkOneOf(key []string, v string, allowed []string, ps *problems) {
	for _, a := range allowed {
		if v == a {
			return
		}
	}
	ps.add(key, "%s = %q: must be one of %s%s", formatKey(key), v, strings.Join(allowed, ", "), suggest.DidYouMean(v, allowed))
}

func checkPath(key []string, v string, emptyOK bool, ps *problems) {
	switch {
	case v == "" && emptyOK:
	case !filepath.IsAbs(v) || strings.ContainsRune(v, 0):
		ps.add(key, "%s = %q: must be an absolute path%s", formatKey(key), v, map[bool]string{true: ` or ""`}[emptyOK])
	case filepath.Clean(v) == "/":
		ps.add(key, "%s = %q: must not be /", formatKey(key), v)
	}
}
