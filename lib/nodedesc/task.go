package nodedesc

import (
	"errors"
	"fmt"
	"strings"

	"gpuprep/lib/gpu"
	"gpuprep/lib/host"
	"gpuprep/lib/topo"
)

// ForTask is srunwrap's way to the node: the description (Load), else, when
// it is missing, stale or unreadable, topo.Discover over sysfs with the
// procfs GPU backend (no NVML; MIG devices then have no UUIDs). source says
// which, for --explain: "/run/gpuprep/node-description (boot <id>)" or
// "sysfs (no node description at /run/gpuprep/node-description)". d is nil on the fallback: the caller
// then loads the TOML configuration itself. Either way node has no CPUs
// list (Node.CPUs), as in the description; Cores and NUMA hold the CPUs.
func ForTask(r host.Root) (node *topo.Node, d *Description, source string, err error) {
	d, lerr := Load(r)
	if lerr == nil {
		return &d.Node, d, fmt.Sprintf("%s (boot %s)", Path, d.BootID), nil
	}
	source = "sysfs (" + whyNot(lerr) + ")"
	n, err := topo.Discover(r, gpu.OpenProcfs(r), topo.Options{NICs: true})
	if err != nil {
		return nil, nil, source, fmt.Errorf("%s; sysfs: %w", whyNot(lerr), err)
	}
	// The same shape as from the description: the planner sees the
	// same facts either way.
	kept, err := decode("sysfs", encode(&Description{Version: Version, Node: *n}))
	if err != nil {
		return nil, nil, source, err
	}
	return &kept.Node, nil, source, nil
}

// whyNot says in a few words why the description is not used: the
// missing file, why it is stale, or the error reading it.
func whyNot(err error) string {
	msg, p := err.Error(), loadProblem(err)
	switch p {
	case "missing":
		var m *missingError
		if errors.As(err, &m) {
			return "no node description at " + m.path
		}
		return msg
	case "stale":
		// "<file>: node description stale: <why>": the why is enough.
		if _, why, ok := strings.Cut(msg, ErrStale.Error()+": "); ok {
			msg = why
		}
	}
	return "description " + p + ": " + msg
}
