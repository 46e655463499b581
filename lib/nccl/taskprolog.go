package nccl

import (
	"fmt"
	"strings"
)

// TaskPrologLines renders vars as the output of a Slurm TaskProlog: one
// "export NAME=VALUE" line each.
//
// slurmstepd reads that output in task.c (_proc_stdout, the same from
// Slurm 22.05 to 25.11): a line starting "export " names a variable up to
// the first "=" (white space around the name dropped) and the value is
// everything after it up to the newline, taken as it is: no shell
// quoting or escapes, spaces and further "=" kept. So values are written
// raw ("export NCCL_IB_HCA==mlx5_0:1" sets "=mlx5_0:1"). A value with a
// newline, or a NUL (the output is read as a C string), cannot be
// carried, and neither can a name that is not an environment variable
// name: each is an error naming the variable.
func TaskPrologLines(vars []Var) (string, error) {
	var b strings.Builder
	for _, v := range vars {
		if !envName(v.Name) {
			return "", fmt.Errorf("TaskProlog: %q is not an environment variable name", v.Name)
		}
		if strings.ContainsAny(v.Value, "\n\x00") {
			return "", fmt.Errorf("TaskProlog: %s=%q holds a newline or NUL, which slurmstepd cannot read from a TaskProlog's export line", v.Name, v.Value)
		}
		b.WriteString("export ")
		b.WriteString(v.Name)
		b.WriteByte('=')
		b.WriteString(v.Value)
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// envName: [A-Za-z_][A-Za-z0-9_]*.
func envName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for _, c := range []byte(s) {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
