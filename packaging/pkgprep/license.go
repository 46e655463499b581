package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// licenseFileNames are the names a Go module's licence file goes by, in
// the order they are looked for in the module's root.
var licenseFileNames = []string{"LICENSE", "LICENSE.txt", "LICENSE.md", "LICENCE", "COPYING", "License"}

// licenseFile reads the licence file at the root of dir (a module in the
// module cache, or GOROOT).
func licenseFile(dir string) (name string, text string, err error) {
	for _, n := range licenseFileNames {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err == nil {
			return n, string(b), nil
		}
		if !os.IsNotExist(err) {
			return "", "", fmt.Errorf("licence of %s: %w", dir, err)
		}
	}
	return "", "", fmt.Errorf("licence of %s: none of %s found", dir, strings.Join(licenseFileNames, ", "))
}

var spaces = regexp.MustCompile(`\s+`)

// classify names the licence of text with its Debian (DEP-5) short name:
// Apache-2.0, MPL-2.0, Expat (the MIT licence), BSD-3-clause, BSD-2-clause,
// ISC. It returns "" for a text it does not recognise: a module under
// another licence must be looked at by a person before it is shipped.
func classify(text string) string {
	t := spaces.ReplaceAllString(text, " ")
	switch {
	case strings.Contains(t, "Apache License") && strings.Contains(t, "Version 2.0"):
		return "Apache-2.0"
	case strings.Contains(t, "Mozilla Public License Version 2.0") || strings.Contains(t, "Mozilla Public License, version 2.0"):
		return "MPL-2.0"
	case strings.Contains(t, "Permission is hereby granted, free of charge"):
		return "Expat"
	case strings.Contains(t, "Redistribution and use in source and binary forms"):
		if strings.Contains(t, "Neither the name") || strings.Contains(t, "names of its contributors may be used") {
			return "BSD-3-clause"
		}
		return "BSD-2-clause"
	case strings.Contains(t, "Permission to use, copy, modify, and/or distribute this software") ||
		strings.Contains(t, "Permission to use, copy, modify, and distribute this software for any purpose with or without fee"):
		return "ISC"
	}
	return ""
}

var holderPrefix = regexp.MustCompile(`(?i)^(copyright\s*)?((\(c\)|©)\s*)?`)

var copyrightLine = regexp.MustCompile(`(?i)^\s*(copyright\s*(\(c\)|©)?\s*[0-9]|copyright\s+\(c\)|(\(c\)|©)\s*[0-9])`)

// copyrightHolders returns the "Copyright ..." lines of a licence or NOTICE
// text (without the word Copyright), leaving out the Apache licence's own
// template ("Copyright [yyyy] [name of copyright owner]") and clauses
// ("Grant of Copyright License").
func copyrightHolders(text string) []string {
	var out []string
	seen := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		l := strings.TrimSpace(line)
		if !copyrightLine.MatchString(l) || strings.Contains(l, "[yyyy]") {
			continue
		}
		l = holderPrefix.ReplaceAllString(l, "")
		l = strings.TrimSpace(l)
		if l != "" && !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return out
}
