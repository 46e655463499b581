package knob

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// thpDir holds the transparent huge page settings.
const thpDir = "/sys/kernel/mm/transparent_hugepage"

// thpKnob is thp_enabled or thp_defrag: a file that reads like
// "always [madvise] never", the bracketed word being in force. Its Value is
// that word; Desired must be one of the words the file offers. It is
// unsupported when the kernel has no THP (the file is absent).
type thpKnob struct {
	id    ID
	f     files
	path  string
	known []string // the kernel's words for the file, in its order
}

// thpKnown are the words the kernel offers in each THP file, in the order
// it lists them (mm/huge_memory.c).
var thpKnown = map[string][]string{
	"enabled": {"always", "madvise", "never"},
	"defrag":  {"always", "defer", "defer+madvise", "madvise", "never"},
}

func init() {
	for i, file := range []string{"enabled", "defrag"} {
		Register(Def{
			Name: "thp_" + file, Kind: NodeKind, Order: 40 + 10*i, Example: `"madvise"`,
			Doc:    "transparent huge pages: reads and writes " + thpDir + "/" + file + "; one of " + strings.Join(thpKnown[file], ", "),
			Decode: decodeOneOf(thpKnown[file]...),
			Writes: []string{strings.TrimPrefix(thpDir, "/") + "/" + file},
			New:    func(r *Run, _ ID) Knob { return newTHP(r.f, "thp_"+file, file) },
		})
	}
}

func newTHP(f files, name, file string) *thpKnob {
	return &thpKnob{id: ID{Name: name, Scope: NodeScope}, f: f, path: thpDir + "/" + file, known: thpKnown[file]}
}

func (k *thpKnob) ID() ID { return k.id }

// parseTHP splits "always [madvise] never" into the word in force and the
// words offered. A file holding a single bare word among known (what a
// fixture file holds after a run killed between Apply's two writes) is
// that word, offering known. Anything else (no or several brackets, odd
// characters) is an error naming the file.
func parseTHP(path, s string, known []string) (string, []string, error) {
	const want = `words with exactly one in brackets, like "always [madvise] never"`
	var cur string
	words := strings.Fields(s)
	if len(words) == 1 && slices.Contains(known, words[0]) {
		return words[0], slices.Clone(known), nil
	}
	opts := make([]string, 0, len(words))
	for _, w := range words {
		if inner, ok := strings.CutPrefix(w, "["); ok {
			inner, ok = strings.CutSuffix(inner, "]")
			if !ok || cur != "" {
				return "", nil, garbage(path, s, want)
			}
			cur, w = inner, inner
		}
		if !isWord(w) {
			return "", nil, garbage(path, s, want)
		}
		opts = append(opts, w)
	}
	if cur == "" {
		return "", nil, garbage(path, s, want)
	}
	return cur, opts, nil
}

func (k *thpKnob) read() (string, []string, error) {
	s, err := k.f.ReadString(k.path)
	if err != nil {
		if notExist(err) {
			return "", nil, unsupported(k.id, k.path)
		}
		return "", nil, fmt.Errorf("%s: %w", k.id, err)
	}
	cur, opts, err := parseTHP(k.path, s, k.known)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", k.id, err)
	}
	return cur, opts, nil
}

func (k *thpKnob) Read() (Value, error) {
	cur, _, err := k.read()
	return Value(cur), err
}

// Desired accepts one of the words the file offers.
func (k *thpKnob) Desired(setting string) (Value, error) {
	_, opts, err := k.read()
	if err != nil {
		return "", err
	}
	w := strings.ToLower(strings.TrimSpace(setting))
	if !slices.Contains(opts, w) {
		return "", fmt.Errorf("%s: %q is not offered by %s (offered: %s)", k.id, clip(setting), k.path, strings.Join(opts, " "))
	}
	return Value(w), nil
}

// Apply writes the word and checks the bracketed word read back.
//
// A kernel always reads back the bracketed list. A plain file (a fixture
// root standing for sysfs) reads back the bare word written; Apply then
// writes the list the kernel would show ("always [madvise] never"), so that
// fixture roots behave like the node and the next Read works.
//
// What the file holds before does not matter beyond its list of words: a
// rollback must put the journaled word back whatever is there now. When
// that list cannot be read (garbage, or a bare word left by a run killed
// between the two writes), the kernel's known list stands in. Only an
// absent file is unsupported.
func (k *thpKnob) Apply(v Value) error {
	if !isWord(string(v)) {
		return fmt.Errorf("%s: %q is not a THP mode", k.id, clip(string(v)))
	}
	_, opts, err := k.read()
	if err != nil {
		if errors.Is(err, ErrUnsupported) {
			return err
		}
		opts = k.known
	}
	got, err := k.f.WriteFile(k.path, string(v))
	if err != nil {
		return fmt.Errorf("%s: %w", k.id, err)
	}
	if got == string(v) && !slices.Contains(opts, got) {
		opts = k.known // a word the file did not list
	}
	if got == string(v) && slices.Contains(opts, got) {
		shown := make([]string, len(opts))
		for i, o := range opts {
			shown[i] = o
			if o == got {
				shown[i] = "[" + o + "]"
			}
		}
		if got, err = k.f.WriteFile(k.path, strings.Join(shown, " ")); err != nil {
			return fmt.Errorf("%s: %w", k.id, err)
		}
	}
	cur, _, err := parseTHP(k.path, got, k.known)
	if err != nil {
		return fmt.Errorf("%s: %w", k.id, err)
	}
	if Value(cur) != v {
		return &MismatchError{ID: k.id, Want: v, Have: Value(cur)}
	}
	return nil
}
