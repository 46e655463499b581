// Command mangen writes gpuprep's man pages: gpuprep-prolog(8),
// gpuprep-epilog(8), gpuprep-gres(8), srunwrap(1) and gpuprep.toml(5),
// as plain roff below -out (man8/gpuprep-prolog.8, ...), and each
// program's bash completion (bash-completion/gpuprep-prolog, ...), from the
// programs' flag sets, lib/config's schema and defaults,
// examples/gpuprep.toml and docs/man. The date is SOURCE_DATE_EPOCH's,
// else the last commit's; the version -version, else the VERSION file's.
//
//	go run ./internal/mangen/cmd/mangen -out build/man
package main

import (
	"flag"
	"fmt"
	"os"

	"gpuprep/internal/mangen"
)

func main() {
	out := flag.String("out", "", "directory to write man1/, man5/ and man8/ into (required)")
	root := flag.String("root", ".", "the repository's root (docs/man, examples/gpuprep.toml, VERSION)")
	version := flag.String("version", "", "gpuprep's version for the pages' footer (default: the VERSION file's, else none)")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: mangen -out DIR [-root DIR] [-version V]")
		os.Exit(2)
	}
	date, err := mangen.PageDate(*root, os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mangen:", err)
		os.Exit(2)
	}
	o := mangen.Options{Root: *root, Date: date, Version: *version}
	if o.Version == "" {
		o.Version = mangen.FileVersion(*root)
	}
	files, err := mangen.Generate(o, *out)
	if err == nil {
		var more []string
		more, err = mangen.GenerateCompletions(*out)
		files = append(files, more...)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mangen:", err)
		os.Exit(1)
	}
	for _, f := range files {
		fmt.Println(f)
	}
}
