package mps

import (
	"context"
	"errors"
	"fmt"
	"strings"

	sd "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
)

// Systemd launches each control daemon as a transient service of its own,
// UnitName(d), over systemd's D-Bus API on PID 1's private socket (as
// lib/isolate/sdunits does): outside slurmd's cgroup, in
// system.slice/<unit>, where systemd keeps the daemon and every server
// it starts. The service runs `nvidia-cuda-mps-control -f` (the daemon in
// the foreground, NVIDIA's documented flag beside -d; Type=simple, so
// systemd knows its main process without a pid file) with the daemon's
// environment, KillMode=control-group (stopping the unit leaves nothing
// of it) and CollectMode=inactive-or-failed (a unit that failed is not
// kept, so the name is free for the next start). Use it only where PID 1
// is systemd (lib/isolate/sdunits.Booted). Each call makes its own
// connection, bounded by its ctx.
type Systemd struct{}

var _ Launcher = Systemd{}

// stopTimeoutUSec bounds systemd's wait after SIGTERM when it stops the
// unit (Done runs after Quit: normally nothing is left to stop).
const stopTimeoutUSec = uint64(5_000_000)

// Launch starts UnitName(d) and waits for systemd's start job to finish.
func (Systemd) Launch(ctx context.Context, d Daemon, bin string, env []string) ([]byte, string, string, error) {
	name := UnitName(d)
	conn, err := sd.NewSystemdConnectionContext(ctx)
	if err != nil {
		return nil, "", "", fmt.Errorf("connecting to systemd (/run/systemd/private): %w", err)
	}
	defer conn.Close()
	// A unit of that name left from an earlier daemon (failed before
	// CollectMode took it) would refuse the new one.
	if err := conn.ResetFailedUnitContext(ctx, name); err != nil && !noSuchUnit(err) {
		return nil, "", "", fmt.Errorf("systemctl reset-failed %s: %w", name, err)
	}
	props := []sd.Property{
		sd.PropDescription("gpuprep: NVIDIA MPS control daemon " + Name(d) + " (" + strings.Join(d.UUIDs, ",") + ")"),
		sd.PropType("simple"),
		sd.PropExecStart([]string{bin, "-f"}, false),
		{Name: "Environment", Value: godbus.MakeVariant(env)},
		{Name: "WorkingDirectory", Value: godbus.MakeVariant("/")},
		{Name: "KillMode", Value: godbus.MakeVariant("control-group")},
		{Name: "CollectMode", Value: godbus.MakeVariant("inactive-or-failed")},
		{Name: "TimeoutStopUSec", Value: godbus.MakeVariant(stopTimeoutUSec)},
	}
	ch := make(chan string, 1)
	if _, err := conn.StartTransientUnitContext(ctx, name, "fail", props, ch); err != nil {
		return nil, "", "", fmt.Errorf("starting transient unit %s: %w", name, err)
	}
	select {
	case res := <-ch:
		if res != "done" {
			return nil, "", "", fmt.Errorf("starting transient unit %s: job %s (journalctl -u %s)", name, res, name)
		}
	case <-ctx.Done():
		return nil, "", "", fmt.Errorf("starting transient unit %s: %w", name, ctx.Err())
	}
	return nil, "systemd unit " + name, "", nil
}

// Cgroup is UnitName(d)'s cgroup: transient services go to system.slice.
func (Systemd) Cgroup(d Daemon) string { return "/system.slice/" + UnitName(d) }

// Done stops UnitName(d) (what is left of it is killed) and forgets it
// if it failed; no such unit is no error.
func (Systemd) Done(ctx context.Context, d Daemon) error {
	name := UnitName(d)
	conn, err := sd.NewSystemdConnectionContext(ctx)
	if err != nil {
		return fmt.Errorf("connecting to systemd (/run/systemd/private): %w", err)
	}
	defer conn.Close()
	ch := make(chan string, 1)
	if _, err := conn.StopUnitContext(ctx, name, "replace", ch); err != nil {
		if noSuchUnit(err) {
			return nil
		}
		return fmt.Errorf("stopping %s: %w", name, err)
	}
	select {
	case <-ch:
	case <-ctx.Done():
		return fmt.Errorf("stopping %s: %w", name, ctx.Err())
	}
	if err := conn.ResetFailedUnitContext(ctx, name); err != nil && !noSuchUnit(err) {
		return fmt.Errorf("systemctl reset-failed %s: %w", name, err)
	}
	return nil
}

// noSuchUnit says whether a D-Bus error means the unit is not loaded.
func noSuchUnit(err error) bool {
	var de godbus.Error
	return errors.As(err, &de) && (de.Name == "org.freedesktop.systemd1.NoSuchUnit" || de.Name == "org.freedesktop.systemd1.UnitNotLoaded")
}
