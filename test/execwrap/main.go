// Command execwrap is the yardstick for srunwrap's per-task cost: a Go main
// that only execs its arguments (PATH lookup, then execve), as a
// do-nothing wrapper would. make bench times srunwrap against it.
package main

import (
	"fmt"
	"os"
	"os/exec"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: execwrap cmd args...")
		os.Exit(2)
	}
	path, err := exec.LookPath(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "execwrap:", err)
		os.Exit(127)
	}
	err = unix.Exec(path, os.Args[1:], os.Environ())
	fmt.Fprintln(os.Stderr, "execwrap:", err)
	os.Exit(126)
}
