// Command mkfixtures writes a fixture-root archive, <out>/<name>.tar.gz, for
// every node shape (or the ones named):
//
//	go run ./internal/fixturegen/cmd/mkfixtures -out test/roots [name...]
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"gpuprep/internal/fixturegen"
	"gpuprep/internal/nodeshape"
)

func main() {
	out := flag.String("out", "test/roots", "directory for the archives")
	flag.Parse()
	shapes := nodeshape.All()
	if flag.NArg() > 0 {
		shapes = nil
		for _, name := range flag.Args() {
			s, ok := nodeshape.ByName(name)
			if !ok {
				fmt.Fprintf(os.Stderr, "mkfixtures: no shape %q\n", name)
				os.Exit(2)
			}
			shapes = append(shapes, s)
		}
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "mkfixtures:", err)
		os.Exit(1)
	}
	for _, s := range shapes {
		var buf bytes.Buffer
		if err := fixturegen.WriteArchive(s, &buf); err != nil {
			fmt.Fprintf(os.Stderr, "mkfixtures: %s: %v\n", s.Name, err)
			os.Exit(1)
		}
		dst := filepath.Join(*out, s.Name+".tar.gz")
		tmp := dst + ".tmp"
		if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "mkfixtures:", err)
			os.Exit(1)
		}
		if err := os.Rename(tmp, dst); err != nil {
			fmt.Fprintln(os.Stderr, "mkfixtures:", err)
			os.Exit(1)
		}
		fmt.Printf("%s (%d bytes)\n", dst, buf.Len())
	}
}
