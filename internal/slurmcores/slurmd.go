package slurmcores

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"gpuprep/internal/oracleroot"
)

// slurmdPath finds slurmd: on PATH, else Debian's /usr/sbin/slurmd (sbin is
// often not on a test's PATH); in $GPUPREP_ORACLE_ROOT when set
// (internal/oracleroot).
func slurmdPath() (string, error) {
	p, err := oracleroot.LookPath("slurmd")
	if err != nil {
		return "", fmt.Errorf("slurmcores: no slurmd: install slurmd (slurm-wlm): %w", err)
	}
	return p, nil
}

// SlurmdAvailable says why SlurmdC cannot run here, or nil.
func SlurmdAvailable() error {
	_, err := slurmdPath()
	return err
}

// SlurmdC runs `slurmd -C` on the fixture root ("/" for this node) and
// returns the counts it prints. slurmd -C reads no slurm.conf, talks to no
// daemon and writes nothing (with -C its hwloc XML cache is neither read
// nor written); its hwloc honours HWLOC_FSROOT. It runs in an empty
// temporary directory all the same, as the cache's path is relative there.
// Only RealMemory and UpTime come from the real machine; they are ignored.
// It gets HWLOC_COMPONENTS=-x86 like the oracle (its counts are the same
// without). A root hwloc cannot read gives this machine's counts: read it
// with Read first.
func SlurmdC(root string) (Counts, error) {
	c, err := slurmdCEnv(env(root))
	if err != nil {
		return Counts{}, fmt.Errorf("slurmd -C on %s: %w", root, err)
	}
	return c, nil
}

func slurmdCEnv(env []string) (Counts, error) {
	bin, err := slurmdPath()
	if err != nil {
		return Counts{}, err
	}
	dir, err := os.MkdirTemp("", "gpuprep-slurmd-C-")
	if err != nil {
		return Counts{}, err
	}
	defer os.RemoveAll(dir)
	out, err := run(oracleroot.Spec{Tool: bin, Args: []string{"-C"}, Env: env, Dir: dir})
	if err != nil {
		return Counts{}, err
	}
	return ParseSlurmdC(out)
}

// ParseSlurmdC reads `slurmd -C` output: "NodeName=n CPUs=.. Boards=..
// SocketsPerBoard=.. CoresPerSocket=.. ThreadsPerCore=.. RealMemory=..".
// Sockets is SocketsPerBoard*Boards.
func ParseSlurmdC(data []byte) (Counts, error) {
	var c Counts
	var perBoard int
	want := map[string]*int{"CPUs": &c.CPUs, "Boards": &c.Boards, "SocketsPerBoard": &perBoard,
		"CoresPerSocket": &c.CoresPerSocket, "ThreadsPerCore": &c.ThreadsPerCore}
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "NodeName=") {
			continue
		}
		var f []string
		for _, kv := range strings.Fields(line) {
			if k, _, _ := strings.Cut(kv, "="); want[k] != nil {
				f = append(f, kv)
			}
		}
		if err := parseKV(f, "=", want); err != nil {
			return Counts{}, err
		}
		c.Sockets = perBoard * c.Boards
		return c, nil
	}
	return Counts{}, errors.New("no NodeName= line")
}

// Require skips the test when the oracle cannot run here; under CI=true a
// missing oracle fails it instead.
func Require(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		missing(t, err, "gcc and libhwloc-dev")
	}
}

// RequireSlurmd is Require for SlurmdC.
func RequireSlurmd(t testing.TB) {
	t.Helper()
	if err := SlurmdAvailable(); err != nil {
		missing(t, err, "slurm-wlm")
	}
}

func missing(t testing.TB, err error, pkgs string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%v (CI=true: install the Debian packages %s, e.g. with test/install-deps.sh)", err, pkgs)
	}
	t.Skip(err)
}
