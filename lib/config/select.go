package config

import (
	"fmt"
	"slices"
	"strings"

	"gpuprep/lib/suggest"
)

// JobSelector is what a job says about the profile it wants: the values of
// SLURM_JOB_CONSTRAINTS and SLURM_JOB_COMMENT in the prolog's environment.
type JobSelector struct {
	Constraints string // SLURM_JOB_CONSTRAINTS, e.g. "a100&gpuprep_benchmark"
	Comment     string // SLURM_JOB_COMMENT, e.g. "nightly run gpuprep=benchmark"
	// MPS says the job asked for gres/mps (slurm.Job.MPS): its profile
	// then gets mps = true where it leaves mps unset (JobProfile).
	MPS bool
}

// SelectorFromEnv reads a JobSelector through getenv (os.Getenv, or a map's
// lookup in tests).
func SelectorFromEnv(getenv func(string) string) JobSelector {
	return JobSelector{Constraints: getenv("SLURM_JOB_CONSTRAINTS"), Comment: getenv("SLURM_JOB_COMMENT")}
}

// Source says where a selected profile name came from.
type Source string

// Sources of a selection.
const (
	FromDefault    Source = "default"    // selection.default_profile
	FromConstraint Source = "constraint" // --constraint=<constraint_prefix><name>
	FromComment    Source = "comment"    // --comment=...<comment_key>=<name>...
)

// Selection is the profile chosen for a job.
type Selection struct {
	Profile  string   // a defined profile, always
	Source   Source   // where Profile came from
	Warnings []string // one line each, for the job's log; a bad request never fails the job
	// DropRequired applies the profile without its required list (set by
	// the prolog's fallback, selection.unfit_profile = "drop").
	DropRequired bool
	// MPS is JobSelector.MPS: the job asked for gres/mps.
	MPS bool
}

// maxRequestLen bounds how much of a user's request a warning quotes.
const maxRequestLen = 64

// Select picks the job's profile. A name from the constraints wins over one
// from the comment (with a warning when they differ); a name that is not
// defined or not allowed (selection.allowed_profiles) is skipped with a
// warning, so a bad constraint falls back to the comment's name, and the job
// gets the default profile when nothing usable is left. A user's request
// never makes the selection fail. A nil cfg means Default().
func Select(cfg *Config, env JobSelector) Selection {
	if cfg == nil {
		cfg = Default()
	}
	sel := Selection{Profile: cfg.Selection.DefaultProfile, Source: FromDefault, MPS: env.MPS}
	type request struct {
		name string
		src  Source
		how  string
	}
	var reqs []request
	if p := cfg.Selection.ConstraintPrefix; p != "" {
		names := constraintNames(env.Constraints, p)
		if len(names) > 1 {
			sel.warn("constraints name several profiles (%s); using the first", quoteAll(names))
		}
		if len(names) > 0 {
			reqs = append(reqs, request{names[0], FromConstraint, "--constraint=" + p + names[0]})
		}
	}
	if k := cfg.Selection.CommentKey; k != "" {
		names := commentNames(env.Comment, k)
		if len(names) > 1 {
			sel.warn("comment names several profiles (%s); using the first", quoteAll(names))
		}
		if len(names) > 0 {
			reqs = append(reqs, request{names[0], FromComment, "--comment " + k + "=" + names[0]})
		}
	}
	for i, r := range reqs {
		if why := cfg.refuse(r.name); why != "" {
			sel.warn("profile %q requested by %s %s; ignoring it", short(r.name), short(r.how), why)
			continue
		}
		if i == 0 && len(reqs) == 2 && reqs[1].name != r.name {
			sel.warn("constraint asks for profile %q, comment for %q; the constraint wins", short(r.name), short(reqs[1].name))
		}
		sel.Profile, sel.Source = r.name, r.src
		return sel
	}
	if n := len(sel.Warnings); len(reqs) > 0 && n > 0 {
		sel.Warnings[n-1] += fmt.Sprintf(", using the default profile %q", sel.Profile)
	}
	return sel
}

// Allowed reports whether a job may select the named profile: it is defined,
// and it is the default profile or selection.allowed_profiles lets it.
func (c *Config) Allowed(name string) bool { return c.refuse(name) == "" }

// refuse says why a job may not select name, or "" if it may.
func (c *Config) refuse(name string) string {
	if _, ok := c.Profiles[name]; !ok {
		return "is not defined" + suggest.DidYouMean(name, c.ProfileNames())
	}
	allowed := c.Selection.AllowedProfiles
	if name == c.Selection.DefaultProfile || slices.Contains(allowed, "*") || slices.Contains(allowed, name) {
		return ""
	}
	if len(allowed) == 0 {
		return "is not allowed (jobs may not choose a profile here)"
	}
	return "is not allowed (allowed: " + strings.Join(allowed, ", ") + ")"
}

func (s *Selection) warn(format string, args ...any) {
	s.Warnings = append(s.Warnings, oneLine(fmt.Sprintf(format, args...)))
}

// constraintNames extracts the profile names a Slurm constraint expression
// asks for: the words starting with prefix, in order, without duplicates.
// Operators (& | , ( ) [ ] *N, spaces) separate words; a word negated with
// "!" asks for nothing.
func constraintNames(expr, prefix string) []string {
	var names []string
	words := strings.FieldsFunc(expr, func(r rune) bool {
		return strings.ContainsRune("&|,()[]*! \t\r\n\"'", r)
	})
	negated := negatedWords(expr)
	for _, w := range words {
		if name, ok := strings.CutPrefix(w, prefix); ok && name != "" && !negated[w] && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

// negatedWords lists the words of a constraint expression preceded by "!".
func negatedWords(expr string) map[string]bool {
	neg := map[string]bool{}
	for i := 0; i < len(expr); i++ {
		if expr[i] != '!' {
			continue
		}
		j := i + 1
		for j < len(expr) && !strings.ContainsRune("&|,()[]*! \t\r\n\"'", rune(expr[j])) {
			j++
		}
		neg[expr[i+1:j]] = true
	}
	return neg
}

// commentNames extracts the names a job comment gives as key=name: the
// comment is split into words at spaces, commas and semicolons; the key
// matches case-insensitively; quotes around the name are dropped.
func commentNames(comment, key string) []string {
	var names []string
	words := strings.FieldsFunc(comment, func(r rune) bool {
		return r == ',' || r == ';' || r == ' ' || r == '\t' || r == '\r' || r == '\n'
	})
	for _, w := range words {
		k, v, ok := strings.Cut(w, "=")
		if !ok || !strings.EqualFold(k, key) {
			continue
		}
		v = strings.Trim(v, `"'.()`)
		if v != "" && !slices.Contains(names, v) {
			names = append(names, v)
		}
	}
	return names
}

// short bounds a user-supplied string for a warning.
func short(s string) string {
	if r := []rune(s); len(r) > maxRequestLen {
		return string(r[:maxRequestLen]) + "..."
	}
	return s
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", short(n))
	}
	return strings.Join(q, ", ")
}
