package oracleroot

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"
)

// Tool is one oracle tool and the command that prints its version.
type Tool struct {
	Name string   // looked up with LookPath
	Args []string // print the version
	What string   // the Debian package providing it
}

// Tools are the oracles' tools: lstopo-no-graphics (internal/hwloc,
// internal/fixturegen), slurmd (internal/slurmcores), and cc with libhwloc's
// headers (internal/slurmcores' C oracle; the version of libhwloc it links
// against is what pkg-config's hwloc.pc says).
var Tools = []Tool{
	{"lstopo-no-graphics", []string{"--version"}, "hwloc or hwloc-nox"},
	{"slurmd", []string{"-V"}, "slurmd"},
	{"cc", []string{"--version"}, "gcc"},
	{"dpkg-query", []string{"-W", "-f", "${Package} ${Version}\\n", "libhwloc-dev"}, "dpkg, with libhwloc-dev installed"},
}

// Version runs tool's version command (on this machine or in the root)
// and returns the first line it prints.
func Version(t Tool) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd, err := Command(ctx, Spec{Tool: t.Name, Args: t.Args, Env: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		return "", fmt.Errorf("%s (Debian package %s): %w", t.Name, t.What, err)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s (Debian package %s): %w: %s", t.Name, strings.Join(t.Args, " "), t.What, err, strings.TrimSpace(out.String()))
	}
	line, _, _ := strings.Cut(strings.TrimSpace(out.String()), "\n")
	return line, nil
}
