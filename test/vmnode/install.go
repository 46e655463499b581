package vmnode

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"
)

// ConfigPath is where gpuprep reads its configuration in the VM.
const ConfigPath = "/etc/gpuprep/gpuprep.toml"

// InstallGpuprep installs gpuprep in the VM the way an admin would: `make
// install DESTDIR=<tmp> PREFIX=/usr/local` in repoDir on the host (make
// builds bin/ first: a few seconds when it is up to date), the staged tree
// tarred (gzip) and unpacked at / in the VM (existing folders keep their owner and
// mode), then `systemd-tmpfiles --create /etc/tmpfiles.d/gpuprep.conf`.
// The programs replace the image's placeholder prolog and epilog. slurmd is
// restarted only if it is not active: it runs the Prolog=/Epilog= path anew
// for every job, so a new binary there needs no restart. Write the
// configuration with WriteConfig.
func (v *VM) InstallGpuprep(ctx context.Context, repoDir string) error {
	stage, err := os.MkdirTemp("", "gpuprep-stage-")
	if err != nil {
		return fmt.Errorf("vmnode: %w", err)
	}
	defer os.RemoveAll(stage)
	if err := os.Chmod(stage, 0o755); err != nil {
		return fmt.Errorf("vmnode: %w", err)
	}
	mk := exec.CommandContext(ctx, "make", "-C", repoDir, "install", "DESTDIR="+stage, "PREFIX=/usr/local")
	var out bytes.Buffer
	mk.Stdout, mk.Stderr = &out, &out
	mk.WaitDelay = 10 * time.Second
	if err := mk.Run(); err != nil {
		return fmt.Errorf("vmnode: make install: %w\n%s", err, tail(out.String(), 20))
	}
	// Compressed: SSH moves 2-3 MB/s into the VM under TCG, gzip halves
	// the 30 MB.
	tarCmd := exec.CommandContext(ctx, "tar", "-C", stage, "--owner=0", "--group=0", "--numeric-owner", "-czf", "-", ".")
	var tarOut, tarErr bytes.Buffer
	tarCmd.Stdout, tarCmd.Stderr = &tarOut, &tarErr
	if err := tarCmd.Run(); err != nil {
		return fmt.Errorf("vmnode: tar: %w: %s", err, tarErr.String())
	}
	_, _, err = v.RunInput(ctx, &tarOut, "tar -xzf - -C / --no-overwrite-dir"+
		" && systemd-tmpfiles --create /etc/tmpfiles.d/gpuprep.conf"+
		" && (systemctl is-active --quiet slurmd || systemctl restart slurmd)")
	if err != nil {
		return fmt.Errorf("vmnode: installing gpuprep: %w", err)
	}
	v.log.Info("vm: gpuprep installed", "from", repoDir)
	return nil
}

// WriteConfig writes toml as /etc/gpuprep/gpuprep.toml (root's, 0644); the
// next prolog or epilog reads it.
func (v *VM) WriteConfig(ctx context.Context, toml string) error {
	return v.WriteFile(ctx, ConfigPath, []byte(toml), 0o644)
}
