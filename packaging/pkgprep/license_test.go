package main

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	apache, err := os.ReadFile("../../LICENSE")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, text, want string }{
		{"gpuprep's LICENSE", string(apache), "Apache-2.0"},
		{"MIT", "Copyright (c) 2013 TOML authors\n\nPermission is hereby granted, free of charge, to any person\nobtaining a copy", "Expat"},
		{"BSD-3", "Redistribution and use in source and binary forms, with or without\nmodification... * Neither the name of Google Inc. nor", "BSD-3-clause"},
		{"BSD-2", "Redistribution and use in source and binary forms, with or without\nmodification, are permitted", "BSD-2-clause"},
		{"MPL", "Mozilla Public License Version 2.0\n==================================", "MPL-2.0"},
		{"GPL", "GNU GENERAL PUBLIC LICENSE\nVersion 3, 29 June 2007", ""},
	} {
		if got := classify(tc.text); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestCopyrightHolders(t *testing.T) {
	text := "Copyright (c) 2013 TOML authors\n   2. Grant of Copyright License. Subject\n   Copyright [yyyy] [name of copyright owner]\nCopyright 2009 The Go Authors.\n© 2020 Someone\n"
	want := []string{"2013 TOML authors", "2009 The Go Authors.", "2020 Someone"}
	if got := copyrightHolders(text); !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestDep5Indent(t *testing.T) {
	got := dep5("a\n\n\tb\n")
	if want := " a\n .\n     b\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if strings.Contains(got, "\t") {
		t.Error("tab kept")
	}
}
