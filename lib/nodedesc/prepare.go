package nodedesc

import (
	"fmt"

	"gpuprep/lib/host"
	"gpuprep/lib/rundir"
)

// PrepareRunDir makes /run/gpuprep and /run/gpuprep/jobs under r the
// writer's (root's), 0755, for a caller that knows no job holds settings:
// one that another user owns or that others can write may already hold
// files they planted, which a reader in a user namespace could not tell
// from root's; fixing its owner or mode would keep them. It is renamed
// aside instead, within its parent (/run/.gpuprep.untrusted-<time>:
// readers never open it, and it is kept for the admin to look at), and
// made afresh (lib/rundir). moved says, one line each, what was moved
// where and why. A symlink in their place is refused, not moved: only root
// can write /run. The prolog opens the run directory itself
// (rundir.Open, moving aside only while no job holds settings) and
// prepares the jobs directory as it writes the notice (WriteNoticeIn).
func PrepareRunDir(r host.Root) (moved []string, err error) {
	rd, err := rundir.Open(r, rundir.Options{Held: func() ([]string, error) { return nil, nil }})
	if err != nil {
		return nil, fmt.Errorf("node directory: %w", err)
	}
	defer rd.Close()
	jobs, err := rd.MkdirAt(noticeSub, 0o755)
	moved = rd.Moved()
	if err != nil {
		return moved, fmt.Errorf("node directory: %w", err)
	}
	jobs.Close()
	return moved, nil
}
