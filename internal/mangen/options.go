package mangen

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// synopsisForms are the usage lines a program's -h prints first
// ("usage: gpuprep-prolog [flags]", then lines indented to line up with
// it): its SYNOPSIS, taken from the flag set's Usage so that the page says
// what -h says.
func synopsisForms(fs *pflag.FlagSet) ([]string, error) {
	var buf bytes.Buffer
	out := fs.Output()
	fs.SetOutput(&buf)
	fs.Usage()
	fs.SetOutput(out)
	lines := strings.Split(buf.String(), "\n")
	first, ok := strings.CutPrefix(lines[0], "usage: ")
	if !ok {
		return nil, fmt.Errorf("%s -h: first line %q does not start with \"usage: \"", fs.Name(), lines[0])
	}
	forms := []string{first}
	for _, l := range lines[1:] {
		rest, ok := strings.CutPrefix(l, "       ")
		if !ok || !strings.HasPrefix(rest, fs.Name()) {
			break
		}
		forms = append(forms, rest)
	}
	return forms, nil
}

// synopsisRoff is the SYNOPSIS section's body: one form a line, the
// program's name and the option names in bold.
func synopsisRoff(prog string, forms []string) string {
	var b strings.Builder
	b.WriteString(".nf\n")
	for _, f := range forms {
		rest, _ := strings.CutPrefix(f, prog)
		b.WriteString(line(bold(prog)+inline(rest)) + "\n")
	}
	b.WriteString(".fi\n")
	return b.String()
}

// optionsRoff is the OPTIONS section's body: every flag of fs that is not
// hidden, in the order -h lists them, with its shorthand, its value's name
// (pflag.UnquoteUsage: a `name` in the usage, else the type; none for a
// boolean), its usage and its default when that is not the zero value.
func optionsRoff(fs *pflag.FlagSet) string {
	var b strings.Builder
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		b.WriteString(".TP\n" + line(optionTag(f)) + "\n")
		_, usage := pflag.UnquoteUsage(f)
		text := inline(usage)
		if def := optionDefault(f); def != "" {
			text += " (default " + escapeText(def) + ")"
		}
		if f.Deprecated != "" {
			text += " Deprecated: " + inline(f.Deprecated) + "."
		}
		b.WriteString(line(text) + "\n")
	})
	return b.String()
}

// optionTag is a flag's tag line: "-q, --quiet", "--format string",
// "--numa-as-socket[=false]" where a value is optional.
func optionTag(f *pflag.Flag) string {
	var tag string
	if f.Shorthand != "" {
		tag = bold("-"+f.Shorthand) + ", "
	}
	tag += bold("--" + f.Name)
	name, _ := pflag.UnquoteUsage(f)
	switch {
	case name == "":
	case f.NoOptDefVal != "":
		tag += "[=" + italic(name) + "]"
	default:
		tag += " " + italic(name)
	}
	return tag
}

// optionDefault is how -h shows a flag's default: quoted for a string,
// "" when the default is the type's zero value (pflag shows none then).
func optionDefault(f *pflag.Flag) string {
	switch f.DefValue {
	case "", "false", "0", "0s", "[]", "<nil>":
		return ""
	}
	if f.Value.Type() == "string" {
		return fmt.Sprintf("%q", f.DefValue)
	}
	return f.DefValue
}
