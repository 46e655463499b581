package hook

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gpuprep/lib/config"
	"gpuprep/lib/host"
	"gpuprep/lib/knob"
	"gpuprep/lib/knobval"
)

// A knob is one file. This test adds two throwaway knobs the way a knob's
// file in lib/knob does, a Def registered with its constructor, and
// nothing else: the engine gives them a baseline, a journal, the restore,
// the drift check and recovery from a killed run, with no line of lib/hook
// knowing them. The second one's value is made of parts that come and go
// (one file per part, as housekeeping_cpus has one cgroup per service):
// declaring it PartWise is all it takes for a part that appears during a
// job to be reported as drift and left alone by the restore.

const (
	testFileKnob  = "test_file_knob"
	testFilePath  = "/sys/kernel/gpuprep_test"
	testPartsKnob = "test_parts_knob"
	testPartsDir  = "/sys/kernel/gpuprep_parts"
)

// fileKnob is a node knob over one file.
type fileKnob struct {
	id   knob.ID
	root host.Root
}

func (k *fileKnob) ID() knob.ID { return k.id }

func (k *fileKnob) Read() (knob.Value, error) {
	s, err := k.root.ReadString(testFilePath)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%s: %w", k.id, knob.ErrUnsupported)
	}
	return knob.Value(s), err
}

func (k *fileKnob) Desired(setting string) (knob.Value, error) { return knob.Value(setting), nil }

func (k *fileKnob) Apply(v knob.Value) error {
	if _, err := k.root.WriteFile(testFilePath, string(v)); err != nil {
		return err
	}
	if got, err := k.Read(); err != nil || got != v {
		return &knob.MismatchError{ID: k.id, Want: v, Have: got}
	}
	return nil
}

// partsForm writes the parts knob's value: one part per file, summed up
// where every file holds the same.
var partsForm = knobval.Form{What: "parts value", Summed: true}

// partsKnob is a part-wise node knob: one file per part under
// testPartsDir.
type partsKnob struct {
	id   knob.ID
	root host.Root
}

func (k *partsKnob) ID() knob.ID { return k.id }

// Read names every part.
func (k *partsKnob) Read() (knob.Value, error) {
	names, err := k.root.ReadDir(testPartsDir)
	if err != nil {
		return "", err
	}
	p := knobval.Parts{}
	for _, n := range names {
		if p[n], err = k.root.ReadString(testPartsDir + "/" + n); err != nil {
			return "", err
		}
	}
	return partsForm.FormatEach(p), nil
}

func (k *partsKnob) Desired(setting string) (knob.Value, error) { return knob.Value(setting), nil }

// Apply writes every part a summed-up value, or each part named (that
// still exists) its own.
func (k *partsKnob) Apply(v knob.Value) error {
	all, each, err := partsForm.Parse(v)
	if err != nil {
		return err
	}
	names, err := k.root.ReadDir(testPartsDir)
	if err != nil {
		return err
	}
	for _, n := range names {
		want, ok := all, each == nil
		if each != nil {
			want, ok = each[n]
		}
		if !ok {
			continue
		}
		if _, err := k.root.WriteFile(testPartsDir+"/"+n, want); err != nil {
			return err
		}
	}
	return nil
}

func decodeTestString(raw any) (string, error) {
	s, ok := raw.(string)
	if !ok {
		return "", errors.New("must be a string")
	}
	return s, nil
}

// registerTestKnobs registers the two throwaway knobs for the test.
func registerTestKnobs(t *testing.T) {
	t.Cleanup(knob.Register(knob.Def{
		Name: testFileKnob, Kind: knob.NodeKind, Order: 980, Example: `"tuned"`, Decode: decodeTestString,
		Doc: "a throwaway knob over one file", Writes: []string{strings.TrimPrefix(testFilePath, "/")},
		New: func(r *knob.Run, id knob.ID) knob.Knob { return &fileKnob{id: id, root: r.Root()} },
	}))
	t.Cleanup(knob.Register(knob.Def{
		Name: testPartsKnob, Kind: knob.NodeKind, Order: 990, Example: `"2"`, Decode: decodeTestString,
		Doc: "a throwaway knob with one file per part", Writes: []string{strings.TrimPrefix(testPartsDir, "/") + "/<*>"},
		New:      func(r *knob.Run, id knob.ID) knob.Knob { return &partsKnob{id: id, root: r.Root()} },
		PartWise: &partsForm,
	}))
}

func newKnobEnv(t *testing.T) *env {
	registerTestKnobs(t)
	e := newEnv(t, "dgxh100", "none")
	cfg, err := config.Parse("test.toml", []byte(`
[general]
dead_job_grace = "0s"
[profiles.default]
`+testFileKnob+` = "tuned"
`+testPartsKnob+` = "2"
`))
	if err != nil {
		t.Fatal(err)
	}
	e.cfg = cfg
	e.write(testFilePath, "base\n")
	e.write(testPartsDir+"/a", "1\n")
	e.write(testPartsDir+"/b", "0\n")
	return e
}

func (e *env) want(files map[string]string, what string) {
	e.t.Helper()
	for rel, want := range files {
		if got := e.read(rel); got != want {
			e.t.Errorf("%s: %s = %q, want %q", what, rel, got, want)
		}
	}
}

// TestNewKnobIsOneFile: applied, held, drift-checked and restored by the
// engine; a part that appeared during the job is drift and left alone.
func TestNewKnobIsOneFile(t *testing.T) {
	e := newKnobEnv(t)
	out := e.prolog(1, nil, "")
	if len(out.Changes) != 2 {
		t.Fatalf("changes %+v, want both test knobs", out.Changes)
	}
	e.want(map[string]string{testFilePath: "tuned", testPartsDir + "/a": "2", testPartsDir + "/b": "2"}, "after the prolog")
	// A second job shares the node: the parts read summed up ("2") are
	// what it wants, so nothing is written; its epilog restores nothing.
	if out := e.prolog(3, nil, ""); len(out.Changes) != 0 {
		t.Errorf("second job's changes %+v, want none", out.Changes)
	}
	if out := e.epilog(3); len(out.Changes) != 0 || len(out.Drift) != 0 {
		t.Errorf("second job's epilog: changes %+v drift %+v, want none", out.Changes, out.Drift)
	}

	// During the job: someone meddles with the file, and a part appears
	// with a value of its own.
	e.write(testFilePath, "meddled\n")
	e.write(testPartsDir+"/c", "7\n")
	out = e.epilog(1)
	drifted := map[string]bool{}
	for _, d := range out.Drift {
		drifted[d.ID.Name] = true
	}
	if !drifted[testFileKnob] || !drifted[testPartsKnob] {
		t.Errorf("drift %+v, want both test knobs", out.Drift)
	}
	e.want(map[string]string{testFilePath: "base", testPartsDir + "/a": "1", testPartsDir + "/b": "0",
		testPartsDir + "/c": "7"}, "after the epilog")
	e.spoolClean("after the epilog")
}

// TestNewKnobKilledProlog: a prolog killed before its commit is rolled
// back from its journal by the next run, each part back to what it held.
func TestNewKnobKilledProlog(t *testing.T) {
	e := newKnobEnv(t)
	e.killedProlog(2, nil, "")
	if _, err := os.Stat(filepath.Join(e.spool.Dir(), journalFile)); err != nil {
		t.Fatalf("no journal left: %v", err)
	}
	e.write(testPartsDir+"/c", "7\n") // appeared after the kill
	e.epilog(2)
	e.want(map[string]string{testFilePath: "base", testPartsDir + "/a": "1", testPartsDir + "/b": "0",
		testPartsDir + "/c": "7"}, "after the rollback")
	e.spoolClean("after the rollback")
}
