// Package sdunits is lib/isolate's Units over systemd's D-Bus API
// (github.com/coreos/go-systemd/v22/dbus), on PID 1's private socket
// /run/systemd/private, so no dbus-daemon is needed. The prolog and epilog
// link it (lib/hookcmd), and --check-config (lib/checkconfig, also
// gpuprep-health's) to tell how the hooks would confine, read-only.
package sdunits

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"

	sd "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/host"
	"gpuprep/lib/isolate"
)

// callTimeout bounds one D-Bus call, inside the run's own deadline.
const callTimeout = 10 * time.Second

// Booted says whether the node under root runs systemd as its init, as
// sd_booted(3) tells: /run/systemd/system exists. Only the node itself
// (root "/") can be reached over D-Bus; a fixture root never is.
func Booted(root host.Root) bool {
	ok, _ := Why(root)
	return ok
}

// runDir is the folder that exists where systemd is PID 1.
const runDir = "/run/systemd/system"

// Why is Booted and, in words, why or why not (for --check-config): it
// reads /run/systemd/system under root, and a root other than "/" is a
// fixture, whose systemd D-Bus does not reach.
func Why(root host.Root) (bool, string) {
	st, err := os.Lstat(root.Path(runDir))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, "systemd is not PID 1 (no " + runDir + ")"
	case err != nil:
		return false, fmt.Sprintf("systemd is not known to be PID 1: %v", err)
	case !st.IsDir():
		return false, "systemd is not PID 1 (" + runDir + " is no folder)"
	case !root.IsHost():
		return false, "the root " + root.Dir() + " is not this machine's, whose systemd alone D-Bus reaches"
	}
	return true, "systemd is PID 1 (" + runDir + ")"
}

// Manager is systemd's unit manager, connected on first use. Every call
// runs under ctx (the run's deadline) and callTimeout.
type Manager struct {
	ctx  context.Context
	once sync.Once
	conn *sd.Conn
	err  error
}

// New returns a Manager for the node where Booted, else nil (so that
// isolation writes cgroups directly).
func New(ctx context.Context, root host.Root) *Manager {
	if !Booted(root) {
		return nil
	}
	return &Manager{ctx: ctx}
}

// Ping connects to systemd and reads its SystemState property, read-only
// (for --check-config): an error says D-Bus does not reach it, and then
// every call of a hook's would fail too.
func (m *Manager) Ping() error {
	conn, err := m.connect()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(m.ctx, callTimeout)
	defer cancel()
	if _, err := conn.SystemStateContext(ctx); err != nil {
		return fmt.Errorf("systemd's SystemState: %w", err)
	}
	return nil
}

// Close closes the connection, if one was made.
func (m *Manager) Close() {
	if m != nil && m.conn != nil {
		m.conn.Close()
	}
}

func (m *Manager) connect() (*sd.Conn, error) {
	m.once.Do(func() {
		// The connection lives as long as the context it is made with
		// (godbus closes it when that is done): the run's own, whose
		// deadline bounds the connecting too.
		m.conn, m.err = sd.NewSystemdConnectionContext(m.ctx)
		if m.err != nil {
			m.err = fmt.Errorf("connecting to systemd (/run/systemd/private): %w", m.err)
		}
	})
	return m.conn, m.err
}

// unitInterface is the D-Bus interface of a unit's type, which holds its
// cgroup properties (ControlGroup, AllowedCPUs).
func unitInterface(name string) string {
	i := strings.LastIndexByte(name, '.')
	t := name[i+1:]
	return strings.ToUpper(t[:1]) + t[1:]
}

// notFound says whether a D-Bus error means there is no such unit (or
// object, or the unit is of another type).
func notFound(err error) bool {
	var de godbus.Error
	if errors.As(err, &de) {
		switch de.Name {
		case "org.freedesktop.systemd1.NoSuchUnit", "org.freedesktop.DBus.Error.UnknownObject",
			"org.freedesktop.DBus.Error.UnknownInterface", "org.freedesktop.DBus.Error.UnknownProperty",
			"org.freedesktop.DBus.Error.InvalidArgs":
			return true
		}
	}
	return false
}

// Unit reads a unit's ControlGroup, AllowedCPUs and DropInPaths
// properties; ok is false when no unit of that name has cgroup cg.
func (m *Manager) Unit(name, cg string) (isolate.UnitInfo, bool, error) {
	conn, err := m.connect()
	if err != nil {
		return isolate.UnitInfo{}, false, err
	}
	ctx, cancel := context.WithTimeout(m.ctx, callTimeout)
	defer cancel()
	typ := unitInterface(name)
	p, err := conn.GetUnitTypePropertyContext(ctx, name, typ, "ControlGroup")
	if notFound(err) {
		return isolate.UnitInfo{}, false, nil
	}
	if err != nil {
		return isolate.UnitInfo{}, false, fmt.Errorf("%s ControlGroup: %w", name, err)
	}
	if got, _ := p.Value.Value().(string); got != cg {
		return isolate.UnitInfo{}, false, nil
	}
	u := isolate.UnitInfo{Name: name}
	p, err = conn.GetUnitTypePropertyContext(ctx, name, typ, "AllowedCPUs")
	if err != nil {
		return isolate.UnitInfo{}, false, fmt.Errorf("%s AllowedCPUs: %w", name, err)
	}
	mask, ok := p.Value.Value().([]byte)
	if !ok {
		return isolate.UnitInfo{}, false, fmt.Errorf("%s AllowedCPUs: %s is not a byte array", name, p.Value.Signature())
	}
	u.AllowedCPUs = FromMask(mask)
	p, err = conn.GetUnitPropertyContext(ctx, name, "DropInPaths")
	if err != nil {
		return isolate.UnitInfo{}, false, fmt.Errorf("%s DropInPaths: %w", name, err)
	}
	u.DropIns, _ = p.Value.Value().([]string)
	return u, true, nil
}

// SetAllowedCPUs sets AllowedCPUs= at runtime (SetUnitProperties with
// runtime true, what `systemctl set-property --runtime` calls).
func (m *Manager) SetAllowedCPUs(name string, cpus cpuset.Set) error {
	conn, err := m.connect()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(m.ctx, callTimeout)
	defer cancel()
	return conn.SetUnitPropertiesContext(ctx, name, true, sd.Property{Name: "AllowedCPUs", Value: godbus.MakeVariant(ToMask(cpus))})
}

// reloadWait is how long Reload waits for systemd's answer. A
// daemon-reload takes well under a second on a node and tens of seconds in
// an emulated VM under load; it runs to its end in systemd whether or not
// anyone waits, so a hook does not spend its deadline on it.
const reloadWait = 2 * time.Second

// Reload asks for a daemon-reload (the Manager's Reload method, which
// answers once systemd has read its configuration again) and waits at most
// reloadWait: not having the answer by then is no error.
func (m *Manager) Reload() error {
	conn, err := m.connect()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(m.ctx, reloadWait)
	defer cancel()
	err = conn.ReloadContext(ctx)
	if errors.Is(err, context.DeadlineExceeded) && m.ctx.Err() == nil {
		return nil
	}
	return err
}

// ToMask is a CPU set as systemd's D-Bus API carries CPU sets (type "ay"):
// bit i%8 of byte i/8 is CPU i; no byte for the empty set.
func ToMask(s cpuset.Set) []byte {
	if s.IsEmpty() {
		return []byte{}
	}
	b := make([]byte, s.Max()/8+1)
	for _, c := range s.List() {
		b[c/8] |= 1 << (c % 8)
	}
	return b
}

// FromMask reads a CPU set in that form.
func FromMask(b []byte) cpuset.Set {
	var ids []int
	for i, x := range b {
		for bit := 0; bit < 8; bit++ {
			if x&(1<<bit) != 0 {
				ids = append(ids, i*8+bit)
			}
		}
	}
	return cpuset.New(ids...)
}

var _ isolate.Units = (*Manager)(nil)
