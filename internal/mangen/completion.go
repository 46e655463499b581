package mangen

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

// CompletionDir is where Generate writes the bash completions, below its
// directory; the packages install them in
// /usr/share/bash-completion/completions.
const CompletionDir = "bash-completion"

// choicesRE finds a flag's value choices at the start of its usage text
// ("debug|info|warn|error", "auto|nvml|procfs|none").
var choicesRE = regexp.MustCompile(`^([a-z0-9:<>_-]+(\|[a-z0-9:<>_-]+)+)`)

// Completion is the program's bash completion, generated from its flag
// set like its man page: every long flag; after a flag that takes a value,
// the value's choices when its usage starts with them (a|b|c), else file
// names. nil for a page without flags.
func (p Page) Completion() []byte {
	if p.FlagSet == nil {
		return nil
	}
	fs := p.FlagSet()
	var flags []string
	choices := map[string]string{}
	fs.VisitAll(func(f *pflag.Flag) {
		flags = append(flags, "--"+f.Name)
		if f.Value.Type() == "bool" {
			return
		}
		if m := choicesRE.FindString(f.Usage); m != "" && !strings.ContainsAny(m, "<>") {
			choices["--"+f.Name] = strings.ReplaceAll(m, "|", " ")
		}
	})
	sort.Strings(flags)
	fn := "_" + strings.NewReplacer("-", "_", ".", "_").Replace(p.Name)
	var b strings.Builder
	fmt.Fprintf(&b, "# bash completion for %s, generated from its flags (internal/mangen).\n", p.Name)
	fmt.Fprintf(&b, "%s() {\n\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n", fn)
	if len(choices) > 0 {
		b.WriteString("\tcase $prev in\n")
		for _, f := range slices.Sorted(maps.Keys(choices)) {
			fmt.Fprintf(&b, "\t%s) COMPREPLY=($(compgen -W '%s' -- \"$cur\")); return ;;\n", f, choices[f])
		}
		b.WriteString("\tesac\n")
	}
	fmt.Fprintf(&b, "\tif [[ $cur == -* ]]; then\n\t\tCOMPREPLY=($(compgen -W '%s' -- \"$cur\"))\n\t\treturn\n\tfi\n", strings.Join(flags, " "))
	b.WriteString("\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n}\n")
	fmt.Fprintf(&b, "complete -o filenames -F %s %s\n", fn, p.Name)
	return []byte(b.String())
}

// GenerateCompletions writes each program's bash completion below dir
// (dir/bash-completion/gpuprep-prolog, ...) and returns the files written.
func GenerateCompletions(dir string) ([]string, error) {
	var files []string
	for _, p := range Pages {
		path, err := writeCompletion(p, dir)
		if err != nil {
			return files, fmt.Errorf("%s: %w", p.Name, err)
		}
		if path != "" {
			files = append(files, path)
		}
	}
	return files, nil
}

// writeCompletion writes p's completion below dir (CompletionDir/<name>);
// "" when p has none.
func writeCompletion(p Page, dir string) (string, error) {
	data := p.Completion()
	if data == nil {
		return "", nil
	}
	path := filepath.Join(dir, CompletionDir, p.Name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("completion directory: %w", err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return "", fmt.Errorf("completion: %w", err)
	}
	return path, nil
}
