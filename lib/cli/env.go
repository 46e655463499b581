package cli

import "gpuprep/lib/cmdenv"

// Env is what a program gets from its process (cmdenv.Env): its
// arguments, its environment and its standard streams.
type Env = cmdenv.Env

// OS is this process's Env.
func OS() Env { return cmdenv.OS() }
