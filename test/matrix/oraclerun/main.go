// Command oraclerun runs one tool of $GPUPREP_ORACLE_ROOT through
// internal/oracleroot, with its own environment less GPUPREP_ORACLE_ROOT
// (HWLOC_FSROOT rewritten), in the root's empty /gpuprep-work:
//
//	GPUPREP_ORACLE_ROOT=ROOT oraclerun TOOL [ARGS...]
//
// test/matrix/oracles.sh puts a script named lstopo-no-graphics that
// calls it first on PATH, for the tests that run lstopo themselves
// (internal/fixturegen/hwloc_test.go) rather than through internal/hwloc.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"gpuprep/internal/oracleroot"
)

func main() {
	if len(os.Args) < 2 || oracleroot.Root() == "" {
		fmt.Fprintln(os.Stderr, "usage: GPUPREP_ORACLE_ROOT=ROOT oraclerun TOOL [ARGS...]")
		os.Exit(2)
	}
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, oracleroot.Var+"=") {
			env = append(env, e)
		}
	}
	// No working directory: lstopo needs none, and this one (a test's
	// package folder) had better not be bound into the root writable.
	cmd, err := oracleroot.Command(context.Background(), oracleroot.Spec{Tool: os.Args[1], Args: os.Args[2:], Env: env})
	if err != nil {
		fmt.Fprintf(os.Stderr, "oraclerun: %v\n", err)
		os.Exit(1)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		var x *exec.ExitError
		if errors.As(err, &x) && x.ExitCode() > 0 {
			os.Exit(x.ExitCode())
		}
		fmt.Fprintf(os.Stderr, "oraclerun: %v\n", err)
		os.Exit(1)
	}
}
