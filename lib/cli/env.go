package cli

import (
	"io"
	"os"
)

// Env is what a program gets from its process: its arguments, its
// environment and its standard streams. A command package's entry point
// takes an Env and returns the exit code, so tests run the whole command
// in-process with buffers and a map for the environment.
type Env struct {
	Args   []string            // the arguments, without the program's name
	Getenv func(string) string // the environment
	Stdout io.Writer
	Stderr io.Writer
}

// OS is this process's Env: os.Args[1:], os.Getenv, os.Stdout, os.Stderr.
func OS() Env {
	return Env{Args: os.Args[1:], Getenv: os.Getenv, Stdout: os.Stdout, Stderr: os.Stderr}
}
