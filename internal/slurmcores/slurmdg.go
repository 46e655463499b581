package slurmcores

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gpuprep/internal/oracleroot"
)

// slurmdDir is a temporary directory for one `slurmd -D -G` run, with the
// spool folder its slurm.conf names; the caller removes it.
func slurmdDir() (string, error) {
	dir, err := os.MkdirTemp("", "gpuprep-slurmd-G-")
	if err != nil {
		return "", err
	}
	if err := os.Mkdir(filepath.Join(dir, "spool"), 0o700); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// oracleConf is the throwaway slurm.conf of a `slurmd -D -G` run whose
// directory slurmd sees at in (oracleroot.Work): spool, log and pid files
// there, auth/none, SlurmdParameters=params when not "", the more lines
// (GresTypes=gpu), then nodeLine.
func oracleConf(in, params string, more []string, nodeLine string) string {
	lines := []string{
		"ClusterName=gpuprep-oracle",
		"SlurmctldHost=localhost(127.0.0.1)",
		"SlurmdSpoolDir=" + filepath.Join(in, "spool"),
		"SlurmdPidFile=" + filepath.Join(in, "slurmd.pid"),
		"SlurmdLogFile=" + filepath.Join(in, "slurmd.log"),
		"StateSaveLocation=" + filepath.Join(in, "state"),
		"ProctrackType=proctrack/linuxproc",
		"TaskPlugin=task/none",
		// Slurm 24.11 and later start the auth plugin before they log
		// the counts; auth/munge fails there without munged. auth/none
		// (in every Debian slurmd, 22.05 to 26.05) needs nothing, and
		// nothing here authenticates: -G exits before any network work.
		"AuthType=auth/none",
		"CredType=cred/none",
	}
	if params != "" {
		lines = append(lines, "SlurmdParameters="+params)
	}
	lines = append(append(lines, more...), nodeLine, "")
	return strings.Join(lines, "\n")
}

// runSlurmdG writes conf as dir/slurm.conf and runs
// `slurmd -D -G -vv -f CONF -N node` in dir with the environment env, in
// private mount and network namespaces (`unshare -m -n`; with a user
// namespace when not root), with a deadline: slurmd prints the node's
// GRES and exits before any network work, and cannot reach a slurmctld
// nor touch the machine's own Slurm. It returns slurmd's stdout and
// stderr together (22.05 logs to stderr with a "slurmd: " prefix, 26.05
// with a "[timestamp] " one) and the run's error, without the output
// (check fatalLine first).
func runSlurmdG(env []string, dir, conf, node string) (string, error) {
	bin, err := slurmdPath()
	if err != nil {
		return "", err
	}
	in := oracleroot.Work(dir)
	if err := os.WriteFile(filepath.Join(dir, "slurm.conf"), []byte(conf), 0o600); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd, err := oracleroot.Command(ctx, oracleroot.Spec{Tool: bin, Env: env, Dir: dir, Unshare: []string{"-n"}, System: true,
		Args: []string{"-D", "-G", "-vv", "-f", filepath.Join(in, "slurm.conf"), "-N", node}})
	if err != nil {
		return "", err
	}
	cmd.WaitDelay = time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	return out.String(), runErr
}

// fatalLine is slurmd's first `fatal:` line in out as an error (a bad
// gres.conf, slurmd's "can not handle nobj[SOCKET] = -1"), or nil.
func fatalLine(out string) error {
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "fatal:") {
			return errors.New(strings.TrimSpace(line))
		}
	}
	return nil
}
