package slurmharness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Binaries the harness runs. Daemons first, then clients.
var requiredBinaries = []string{
	"munged", "slurmctld", "slurmd",
	"srun", "sbatch", "scontrol", "sinfo", "squeue", "scancel",
}

// Packages that provide them on Debian.
var debianPackages = []string{"slurm-wlm", "munge"}

const policyRCD = "/usr/sbin/policy-rc.d"

// bootServices are the services (and their Debian packages, same names) that
// slurm-wlm and munge enable at boot. The tests run private daemons, so an
// install leaves the ones it brought disabled.
var bootServices = []string{"slurmctld", "slurmd", "munge"}

// lookPath finds a binary in PATH or in the system folders a test binary's
// PATH may lack (/usr/sbin, /sbin).
func lookPath(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/usr/bin", "/sbin", "/bin", "/usr/local/sbin", "/usr/local/bin"} {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in PATH or /usr/sbin", name)
}

// Missing lists the binaries the harness needs that are not installed.
func Missing() []string {
	var out []string
	for _, b := range requiredBinaries {
		if _, err := lookPath(b); err != nil {
			out = append(out, b)
		}
	}
	return out
}

// EnsureInstalled installs Debian's slurm-wlm and munge when slurmctld,
// slurmd, munged or the Slurm clients are missing. It needs root. While apt
// runs, /usr/sbin/policy-rc.d (exit 101) keeps the packages' init scripts from
// starting system daemons; it is removed afterwards if this call created it.
// Concurrent callers (several test binaries) serialise on a lock file. Without
// a deadline in ctx the whole install gets 10 minutes.
func EnsureInstalled(ctx context.Context) error {
	if len(Missing()) == 0 {
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("slurmharness: %s missing and not root: run test/install-deps.sh as root", strings.Join(Missing(), ", "))
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Minute)
		defer cancel()
	}
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "slurmharness-install.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("slurmharness: install lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("slurmharness: install lock: %w", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if len(Missing()) == 0 { // another process installed it meanwhile
		return nil
	}
	if _, err := lookPath("apt-get"); err != nil {
		return fmt.Errorf("slurmharness: %s missing and no apt-get to install %s", strings.Join(Missing(), ", "), strings.Join(debianPackages, " "))
	}
	var fresh []string // services whose package this install brings
	for _, svc := range bootServices {
		if !debInstalled(ctx, svc) {
			fresh = append(fresh, svc)
		}
	}
	if err := aptInstall(ctx, policyRCD, nil); err != nil {
		return err
	}
	disableAtBoot(ctx, fresh, runQuiet)
	if m := Missing(); len(m) > 0 {
		return fmt.Errorf("slurmharness: installed %s but still missing %s", strings.Join(debianPackages, " "), strings.Join(m, ", "))
	}
	return nil
}

// aptInstall runs apt-get update and apt-get install -y debianPackages
// (plus extra install flags) with DEBIAN_FRONTEND=noninteractive, with a
// policy-rc.d at policy (created and removed again if absent).
func aptInstall(ctx context.Context, policy string, extra []string) error {
	if _, err := os.Lstat(policy); errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(policy, []byte("#!/bin/sh\n# written by gpuprep's slurmharness while installing packages\nexit 101\n"), 0o755); err != nil {
			return fmt.Errorf("slurmharness: writing %s: %w", policy, err)
		}
		defer os.Remove(policy)
	}

	apt := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		cmd.Stdin = nil
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.WaitDelay = 10 * time.Second
		if err := cmd.Run(); err != nil {
			if ctx.Err() != nil {
				err = fmt.Errorf("%w (%v)", err, ctx.Err())
			}
			return fmt.Errorf("slurmharness: apt-get %s: %v\n%s", strings.Join(args, " "), err, tail(out.String(), 20))
		}
		return nil
	}
	if err := apt("update"); err != nil {
		return err
	}
	args := append([]string{"install", "-y", "-o", "DPkg::Lock::Timeout=120"}, extra...)
	return apt(append(args, debianPackages...)...)
}

// debInstalled says whether the Debian package pkg is installed.
func debInstalled(ctx context.Context, pkg string) bool {
	out, err := exec.CommandContext(ctx, "dpkg-query", "-W", "-f=${Status}", pkg).Output()
	return err == nil && strings.HasSuffix(strings.TrimSpace(string(out)), "ok installed")
}

// runQuiet runs a command, its output discarded.
func runQuiet(ctx context.Context, name string, args ...string) error {
	return exec.CommandContext(ctx, name, args...).Run()
}

// disableAtBoot undoes what Debian's postinst does even when policy-rc.d
// kept the daemons from starting: it enables them at boot. With systemctl
// (which also works offline) "systemctl disable --quiet <services>", else
// "update-rc.d <service> disable" for each; best effort.
func disableAtBoot(ctx context.Context, services []string, run func(ctx context.Context, name string, args ...string) error) {
	if len(services) == 0 {
		return
	}
	if _, err := lookPath("systemctl"); err == nil {
		run(ctx, "systemctl", append([]string{"disable", "--quiet"}, services...)...)
		return
	}
	if _, err := lookPath("update-rc.d"); err == nil {
		for _, s := range services {
			run(ctx, "update-rc.d", s, "disable")
		}
	}
}

// Require makes sure a real Slurm can run for this test: root and the
// binaries. As root a missing Slurm is installed (EnsureInstalled) and a
// failed install fails the test. Not root: the test is skipped with the
// reason, except on CI (CI=true), where anything missing is a failure.
func Require(t testing.TB) {
	t.Helper()
	root := os.Geteuid() == 0
	missing := Missing()
	if root && len(missing) == 0 {
		return
	}
	ci := os.Getenv("CI") == "true"
	var why string
	switch {
	case !root && len(missing) > 0:
		why = fmt.Sprintf("needs root and %s (run test/install-deps.sh as root)", strings.Join(missing, ", "))
	case !root:
		why = "needs root (munged, slurmd and mknod run as root)"
	}
	if why != "" {
		if ci {
			t.Fatalf("slurmharness: %s; CI=true makes this a failure", why)
		}
		t.Skipf("slurmharness: %s", why)
	}
	t.Logf("slurmharness: installing %s (missing: %s)", strings.Join(debianPackages, " "), strings.Join(missing, ", "))
	start := time.Now()
	if err := EnsureInstalled(context.Background()); err != nil {
		// Root with a failed install: a failure everywhere (on CI a missing
		// component must never turn into a skip).
		t.Fatalf("%v", err)
	}
	t.Logf("slurmharness: installed in %v", time.Since(start).Round(time.Second))
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
