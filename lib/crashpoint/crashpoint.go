// Package crashpoint marks the steps at which gpuprep's hooks change the
// node (a knob file written, a spool file created, written, renamed or
// removed, a folder made, a cgroup set), so that the crash tests
// (test/e2e/crash_test.go) can kill a hook with SIGKILL right before each
// of them, one run per step, and check that the node recovers.
//
// In a production build Hit and HitAt do nothing: On is the constant
// false, so a call compiles to nothing and the binary holds no trace of
// this package's test side (no environment variable is read). Only a
// binary built with -tags gpuprep_crashpoints counts the steps:
//
//	GPUPREP_CRASH_AT=N     the process kills itself (SIGKILL, as the kernel
//	                       would deliver it from outside) at its N-th step,
//	                       before that step's change is made;
//	GPUPREP_CRASH_LOG=FILE one line per step, "<n> <op> <path>", appended
//	                       to FILE as the step is reached (the test counts
//	                       a run's steps with it and names the step a kill
//	                       point stopped at).
//
// Steps are counted across all goroutines of the process in the order
// they reach Hit; where the hook writes per-CPU files on several
// goroutines, the N-th step may be another file from one run to the next,
// but it is always N-1 steps done.
package crashpoint

// Hit marks a step that changes the file at path (op names the change:
// "knob-write", "spool-rename", ...). Call it right before the change.
// Pass a path the caller already holds: the arguments are evaluated even
// in a production build, where Hit itself is empty.
func Hit(op, path string) {
	if On {
		hit(op, path)
	}
}

// HitAt is Hit for the file name in the folder dir, for callers that hold
// the two apart (the path is joined only in a crashpoints build).
func HitAt(op, dir, name string) {
	if On {
		hit(op, dir+"/"+name)
	}
}
