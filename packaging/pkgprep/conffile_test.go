package main

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"gpuprep/lib/config"
)

// TestPackagedConfigSetsNothing: the /etc/gpuprep/gpuprep.toml the packages
// install parses (the prolog would accept it) and sets nothing: the
// configuration it gives is the built-in one, so installing the package
// changes no node until the admin edits the file.
func TestPackagedConfigSetsNothing(t *testing.T) {
	example, err := os.ReadFile("../../examples/gpuprep.toml")
	if err != nil {
		t.Fatal(err)
	}
	conf, err := commentedConfig(example)
	if err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/gpuprep.toml"
	if err := os.WriteFile(path, conf, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := config.Load(path)
	if err != nil {
		t.Fatalf("config.Load of the packaged file: %v", err)
	}
	want := config.Default()
	got.File = want.File // where it was read from
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the packaged file changes the configuration:\n got %+v\nwant %+v", got, want)
	}
	// Every setting of the example is there, commented out, for the admin
	// to uncomment: the example's "[general]" and "state_dir = ..." lines.
	for _, line := range []string{"#[general]", "#state_dir = ", "#[profiles.default]", "Prolog=/usr/sbin/gpuprep-prolog"} {
		if !strings.Contains(string(conf), line) {
			t.Errorf("the packaged file has no %q", line)
		}
	}
}

// TestUncommentedExampleStillParses guards the test above: the example
// itself, uncommented, is a configuration that loads, so the lines the
// admin uncomments are valid ones.
func TestUncommentedExampleStillParses(t *testing.T) {
	if _, err := config.Load("../../examples/gpuprep.toml"); err != nil {
		t.Fatalf("the example configuration does not load: %v", err)
	}
}
