package vmnode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// controlPath is the socket of the shared SSH connection.
func (v *VM) controlPath() string { return filepath.Join(v.Dir, "ssh.ctl") }

// sshArgs are the options of every ssh call: non-interactive, any host key
// (every boot is a new VM on a reused port), the image's key, and the shared
// connection when there is one (ControlMaster=no: without the socket ssh
// simply connects on its own).
func (v *VM) sshArgs(user string) []string {
	return []string{
		"-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=no",
		"-o", "UserKnownHostsFile=/dev/null",
		"-o", "LogLevel=ERROR",
		"-o", "ConnectTimeout=20",
		"-o", "ServerAliveInterval=5",
		"-o", "ServerAliveCountMax=4",
		"-o", "ControlMaster=no",
		"-o", "ControlPath=" + v.controlPath(),
		"-i", v.key,
		"-p", strconv.Itoa(v.Port),
		"-l", user,
		"127.0.0.1",
	}
}

// startMaster opens the SSH connection later commands share: a fresh login
// costs seconds of emulated CPU (key exchange, PAM, logind), a command on the
// open connection a fraction of one. The ssh process is ours (killed by pid
// in stopMaster, and with the test binary).
func (v *VM) startMaster(ctx context.Context) error {
	v.stopMaster()
	os.Remove(v.controlPath())
	args := append([]string{"-N", "-o", "ControlMaster=yes"}, v.sshArgs("root")...)
	// The later ControlMaster=no must not override ours: ssh takes the first.
	cmd := exec.Command("ssh", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("vmnode: ssh: %w", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	v.mu.Lock()
	v.master, v.masterDone = cmd, exited
	v.mu.Unlock()

	// A first login may take long on a busy host; 90 s at most.
	deadline := time.Now().Add(90 * time.Second)
	for {
		select {
		case <-exited:
			v.mu.Lock()
			v.master, v.masterDone = nil, nil
			v.mu.Unlock()
			return fmt.Errorf("vmnode: ssh login failed: %s", strings.TrimSpace(stderr.String()))
		case <-ctx.Done():
			v.stopMaster()
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		check := exec.Command("ssh", append([]string{"-O", "check"}, v.sshArgs("root")...)...)
		if check.Run() == nil {
			return nil
		}
		if time.Now().After(deadline) {
			v.stopMaster()
			return errors.New("vmnode: ssh login took over 90 s")
		}
	}
}

// stopMaster ends the shared connection (by the ssh process's pid).
func (v *VM) stopMaster() {
	v.mu.Lock()
	m, done := v.master, v.masterDone
	v.master, v.masterDone = nil, nil
	v.mu.Unlock()
	if m == nil {
		return
	}
	m.Process.Kill()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
	os.Remove(v.controlPath())
}

// Run runs cmd in the VM as root through sh (the login shell of root is
// bash; cmd is one shell command line, quote its words with Quote). A
// non-zero exit is an error wrapping *exec.ExitError with stderr's tail; ssh's
// own failures exit 255.
func (v *VM) Run(ctx context.Context, cmd string) (stdout, stderr string, err error) {
	return v.RunInput(ctx, nil, cmd)
}

// RunInput is Run with stdin.
func (v *VM) RunInput(ctx context.Context, stdin io.Reader, cmd string) (stdout, stderr string, err error) {
	return v.runAs(ctx, "root", stdin, cmd)
}

// RunAs runs cmd as user (e.g. "alice") in their home folder, through
// runuser from root's shared connection (no login: no PAM session, no
// logind scope; the process sits in root's session scope).
func (v *VM) RunAs(ctx context.Context, user, cmd string) (stdout, stderr string, err error) {
	if user == "" || user == "root" {
		return v.Run(ctx, cmd)
	}
	return v.Run(ctx, "runuser -u "+Quote(user)+" -- /bin/sh -c "+Quote(`cd "$HOME" 2>/dev/null || cd /tmp; `+cmd))
}

func (v *VM) runAs(ctx context.Context, user string, stdin io.Reader, cmd string) (string, string, error) {
	if !v.Running() {
		return "", "", v.exited()
	}
	args := append(v.sshArgs(user), "--", cmd)
	c := exec.CommandContext(ctx, "ssh", args...)
	var out, errb bytes.Buffer
	c.Stdin, c.Stdout, c.Stderr = stdin, &out, &errb
	c.WaitDelay = 5 * time.Second
	err := c.Run()
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", err, ctx.Err())
		}
		err = fmt.Errorf("vmnode: %s: %w: %s", short(cmd), err, tail(strings.TrimSpace(errb.String()), 10))
	}
	return out.String(), errb.String(), err
}

// short is cmd cut for an error message.
func short(cmd string) string {
	cmd = strings.Join(strings.Fields(cmd), " ")
	if len(cmd) > 120 {
		return cmd[:117] + "..."
	}
	return cmd
}

// Quote quotes s as one word for sh.
func Quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// CopyIn copies the local file to remote (its mode kept; written beside and
// renamed, so a reader never sees half of it).
func (v *VM) CopyIn(ctx context.Context, local, remote string) error {
	f, err := os.Open(local)
	if err != nil {
		return fmt.Errorf("vmnode: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("vmnode: %w", err)
	}
	return v.writeFrom(ctx, f, remote, fi.Mode().Perm())
}

// WriteFile writes data to path in the VM with mode (folders made as needed;
// written beside and renamed).
func (v *VM) WriteFile(ctx context.Context, path string, data []byte, mode os.FileMode) error {
	return v.writeFrom(ctx, bytes.NewReader(data), path, mode)
}

func (v *VM) writeFrom(ctx context.Context, r io.Reader, path string, mode os.FileMode) error {
	tmp := path + ".vmnode-tmp"
	cmd := fmt.Sprintf("mkdir -p %s && cat > %s && chmod %o %s && mv -f %s %s",
		Quote(filepath.Dir(path)), Quote(tmp), mode.Perm(), Quote(tmp), Quote(tmp), Quote(path))
	_, _, err := v.RunInput(ctx, r, cmd)
	return err
}

// ReadFile returns the content of path in the VM.
func (v *VM) ReadFile(ctx context.Context, path string) (string, error) {
	out, _, err := v.Run(ctx, "cat "+Quote(path))
	return out, err
}

// Exists says whether path exists in the VM.
func (v *VM) Exists(ctx context.Context, path string) (bool, error) {
	out, _, err := v.Run(ctx, "if [ -e "+Quote(path)+" ]; then echo yes; else echo no; fi")
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(out) == "yes", nil
}

// probeTimeout bounds one attempt of a polling loop (sinfo, scontrol, a
// test of a file): each answers within seconds even under TCG on a busy host.
const probeTimeout = 45 * time.Second

// probe runs cmd as one attempt of a polling loop, under probeTimeout. An
// attempt that hangs (seen once in CI after a reboot: one sinfo on the shared
// connection never returned, and the loop waited 18 minutes on it) is
// killed, logged, and the shared connection is opened anew, so the next
// attempt does not wait on the same stuck connection.
func (v *VM) probe(ctx context.Context, cmd string) (string, error) {
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	out, _, err := v.Run(pctx, cmd)
	if err != nil && ctx.Err() == nil && errors.Is(pctx.Err(), context.DeadlineExceeded) {
		v.log.Warn("vm: a probe hung; reopening the shared SSH connection", "cmd", short(cmd), "after", probeTimeout)
		if merr := v.startMaster(ctx); merr != nil {
			v.log.Warn("vm: shared SSH connection", "err", merr)
		}
	}
	return out, err
}

// WaitUntil runs cmd every interval (each attempt under probeTimeout) until
// it exits 0 and returns its output, or ctx's error with cmd's last error.
func (v *VM) WaitUntil(ctx context.Context, interval time.Duration, cmd string) (string, error) {
	for {
		out, err := v.probe(ctx, cmd)
		if err == nil {
			return out, nil
		}
		if !v.Running() {
			return "", v.exited()
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("vmnode: waiting for %q: %w (last: %v)", short(cmd), ctx.Err(), err)
		case <-time.After(interval):
		}
	}
}
