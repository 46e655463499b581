package knob

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/user"
	"strconv"
	"strings"
	"time"

	"gpuprep/lib/host"
	"gpuprep/lib/mps"
	"gpuprep/lib/plan"
)

// mps, one per GPU of the job (scope GPUScope(uuid)), or per MIG device of
// the job (scope GPUScope(<MIG UUID>), Def.MIG; issue 36): an NVIDIA MPS
// control daemon for the job's user on that GPU or MIG device (issue 23),
// started with CUDA_VISIBLE_DEVICES=<its UUID>. Its Value is the user
// the gpuprep daemon of this GPU serves, "" for none; so the prolog's
// journal, the count of jobs holding it, the drift check and the restore
// treat it as any knob: jobs of one user share the daemon, the last one's
// epilog (or a dead job's release) stops it, and a daemon that died under
// a job reads "" where the job held its user: drift.
//
//	Read       the user of the live daemon found under <base>/<user>-<key>
//	           (lib/mps: DaemonsIn, Control.Alive; key = mps.Key([uuid]));
//	           several joined by commas; no nvidia-cuda-mps-control on the
//	           node is ErrUnsupported
//	Desired    "on" (mps = true): the job's user (Env.User), once the
//	           GPU's compute mode (a MIG device's GPU's, read only)
//	           allows MPS (mps.Refuse: prohibited is refused); "off":
//	           leave alone
//	Apply(u)   stops the daemons of this GPU serving others, then makes
//	           u's directories, root's (mps.CreateIn), starts the daemon
//	           (through Env.MPS.Launcher: a systemd unit or a cgroup of
//	           its own) and gives u search access to the pipe directory
//	           (mps.Grant: an ACL entry, nothing more)
//	Apply("")  quit (bounded, then kill: Control.Quit), checks that no
//	           daemon or server of the directory is left, ends the unit or
//	           cgroup (Control.Done), moves the directories aside and
//	           deletes them (mps.RemoveIn)
//
// The base is the run directory's mps (Env.RunDir; mpsdirs.go), or
// MPSEnv.Base.
//
// The compute mode is never changed here (gpu_compute_mode, ordered
// before, does that). A job of another user on a GPU whose daemon serves
// someone else runs without MPS and holds nothing (Conflict).
type mpsKnob struct{ gpuKnob }

// MPSEnv is how the mps knob runs its daemons.
type MPSEnv struct {
	// Base is the directory on this machine that holds the daemons'
	// directories; "" is mps.DefaultBase under Env.Root, reached through
	// the run directory (Env.RunDir).
	Base string
	// Control runs the daemons; nil is an mps.Exec of the
	// nvidia-cuda-mps-control found under Env.Root (mps.Find), with
	// Launcher and Log. It reads this machine's /proc, whatever
	// Env.Root: the daemon is a process it starts here (a fixture root's
	// /proc is a snapshot where it never shows).
	Control mps.Control
	// Launcher starts a daemon outside the caller's cgroup (mps.Systemd,
	// mps.Cgroupfs); nil runs it as the caller's child.
	Launcher mps.Launcher
	Log      *slog.Logger
	// Wait bounds the wait for a daemon to quit before what is left is
	// killed; 0 is mpsQuitWait.
	Wait time.Duration
}

// mpsQuitWait is the default wait for a daemon to quit; mpsApplyTimeout
// bounds one Apply (a start, or the quit of each daemon of the GPU).
const (
	mpsQuitWait     = 10 * time.Second
	mpsApplyTimeout = 60 * time.Second
)

func init() {
	Register(Def{
		Name: "mps", Order: 1100, Kind: GPUKind,
		Example:    `true`,
		Doc:        "an NVIDIA MPS control daemon for the job's user on each of its GPUs, or each of its MIG devices (nvidia-cuda-mps-control; CUDA_MPS_PIPE_DIRECTORY=" + mps.DefaultBase + "/<user>-<key>/pipe); true, false = leave alone",
		Decode:     decodeOnOff,
		LeaveAlone: string(onOff(false)),
		New:        func(r *Run, id ID) Knob { return &mpsKnob{r.gpuBase(id)} },
		GoWithout:  withoutMPS,
		MIG:        true,
	})
}

func (k *mpsKnob) uuid() string {
	u, _ := k.id.GPU()
	return u
}

func (k *mpsKnob) key() (string, error) { return mps.Key([]string{k.uuid()}) }

func (k *mpsKnob) base() string {
	if k.run.env.MPS.Base != "" {
		return k.run.env.MPS.Base
	}
	return k.run.env.Root.Path(mps.DefaultBase)
}

// launcher is Env.MPS.Launcher, else one that keeps each daemon out of
// the hook's own cgroup (slurmd's): a transient systemd unit where PID 1
// is systemd (Env.Isolation.Units is set then), else a cgroup of
// gpuprep's under the cgroup v2 root (mps.Cgroupfs, which warns when it
// cannot).
func (k *mpsKnob) launcher() mps.Launcher {
	switch {
	case k.run.env.MPS.Launcher != nil:
		return k.run.env.MPS.Launcher
	case k.run.env.Isolation.Units != nil:
		return mps.Systemd{}
	}
	return mps.Cgroupfs{Root: k.run.env.Root}
}

// log is Env.MPS.Log, else the run's.
func (k *mpsKnob) log() *slog.Logger {
	if k.run.env.MPS.Log != nil {
		return k.run.env.MPS.Log
	}
	return k.run.Log()
}

// control is Env.MPS.Control, or an mps.Exec of the node's program; no
// program is ErrUnsupported.
func (k *mpsKnob) control() (mps.Control, error) {
	if !k.run.job {
		return nil, fmt.Errorf("%s: no job: %w", k.id, ErrUnsupported)
	}
	if k.run.env.MPS.Control != nil {
		return k.run.env.MPS.Control, nil
	}
	bin, err := mps.Find(k.run.env.Root)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", k.id, ErrUnsupported, err)
	}
	return &mps.Exec{Bin: bin, Proc: host.NewRoot("/"), Launcher: k.launcher(), Log: k.log()}, nil
}

func (k *mpsKnob) daemon(p mps.Paths) mps.Daemon {
	return mps.Daemon{UUIDs: []string{k.uuid()}, Paths: p}
}

// Read returns the users whose daemon runs for this GPU, "" for none.
func (k *mpsKnob) Read() (Value, error) {
	ctl, err := k.control()
	if err != nil {
		return "", err
	}
	key, err := k.key()
	if err != nil {
		return "", fmt.Errorf("%s: %w", k.id, err)
	}
	owned, err := k.daemons(key)
	if err != nil {
		return "", fmt.Errorf("%s: %w", k.id, err)
	}
	var users []string
	for _, o := range owned {
		pid, err := ctl.Alive(k.daemon(o.Paths))
		if err != nil {
			return "", fmt.Errorf("%s: %w", k.id, err)
		}
		if pid > 0 {
			users = append(users, o.User)
		}
	}
	return Value(strings.Join(users, ",")), nil
}

// Desired turns "on" (mps = true) into the job's user, once the GPU's
// compute mode is one MPS works in; "off" is leave alone. With no job (GPUKnobs:
// --check-config) or no user (SLURM_JOB_USER unset) only the compute mode
// is checked, and the value is Unknown, which Apply refuses.
func (k *mpsKnob) Desired(setting string) (Value, error) {
	switch Value(setting) {
	case onOff(true):
	case onOff(false):
		return "", fmt.Errorf("%s: %w", k.id, ErrLeaveAlone)
	default:
		return "", fmt.Errorf("%s: %q is not on or off", k.id, clip(setting))
	}
	if err := k.refuse(); err != nil {
		return "", err
	}
	if !k.run.job || k.run.env.User == "" {
		return Unknown, nil // no job, or its user unknown: Apply refuses
	}
	u := k.run.env.User
	key, err := k.key()
	if err == nil {
		_, err = mps.Dirs(k.base(), u, key)
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", k.id, err)
	}
	return Value(u), nil
}

// refuse reads the GPU's compute mode and says why MPS cannot run in it
// (mps.Refuse); a backend that cannot read the mode is not refused.
func (k *mpsKnob) refuse() error {
	s, err := k.settings("compute_mode")
	if errors.Is(err, ErrUnsupported) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := mps.Refuse(string(s.ComputeMode)); err != nil {
		if isMIG(k.uuid()) {
			return fmt.Errorf("%s: MIG device of GPU %d: %w", k.id, k.index, err)
		}
		return fmt.Errorf("%s: GPU %d: %w", k.id, k.index, err)
	}
	return nil
}

// Apply makes v the user served by this GPU's only daemon ("" none).
func (k *mpsKnob) Apply(v Value) error {
	if v == Unknown {
		return fmt.Errorf("%s: the job's user is not known (SLURM_JOB_USER): an MPS daemon serves one user", k.id)
	}
	if strings.Contains(string(v), ",") {
		return fmt.Errorf("%s: cannot start a daemon for %q: one user's name wanted", k.id, v)
	}
	ctl, err := k.control()
	if err != nil {
		return err
	}
	key, err := k.key()
	if err != nil {
		return fmt.Errorf("%s: %w", k.id, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), mpsApplyTimeout)
	defer cancel()
	owned, err := k.daemons(key)
	if err != nil {
		return fmt.Errorf("%s: %w", k.id, err)
	}
	want := string(v)
	for _, o := range owned {
		if o.User == want {
			continue
		}
		if err := k.down(ctx, ctl, o.Paths); err != nil {
			return err
		}
	}
	if want != "" {
		if err := k.up(ctx, ctl, key, want); err != nil {
			return err
		}
	}
	return k.verify(v, k.Read)
}

// up starts user's daemon unless it runs; what a dead one left (its
// directories, servers) goes first.
func (k *mpsKnob) up(ctx context.Context, ctl mps.Control, key, user string) error {
	if err := k.refuse(); err != nil {
		return err
	}
	p, err := mps.Dirs(k.base(), user, key)
	if err != nil {
		return fmt.Errorf("%s: %w", k.id, err)
	}
	d := k.daemon(p)
	if pid, err := ctl.Alive(d); err != nil {
		return fmt.Errorf("%s: %w", k.id, err)
	} else if pid > 0 {
		return nil
	}
	if k.exists(p) { // a dead daemon's
		if err := k.down(ctx, ctl, p); err != nil {
			return err
		}
	}
	if d.UID, err = k.owner(user); err != nil {
		return err
	}
	if err := k.create(p, d.UID); err != nil {
		return fmt.Errorf("%s: %w", k.id, err)
	}
	if _, err := ctl.Start(ctx, d); err != nil {
		// A daemon that came up late, or half, may run all the same:
		// stop what runs of p (quit, then kill) before its directories
		// go, so none is left without them.
		if derr := k.down(context.WithoutCancel(ctx), ctl, p); derr != nil {
			return fmt.Errorf("%s: %w (and stopping what it left: %v)", k.id, err, derr)
		}
		return fmt.Errorf("%s: %w", k.id, err)
	}
	return nil
}

// down stops the daemon of p and its servers (quit, a bounded wait, then
// kill), checks nothing of them is left, ends its unit or cgroup and
// removes its directories.
func (k *mpsKnob) down(ctx context.Context, ctl mps.Control, p mps.Paths) error {
	d := k.daemon(p)
	wait := k.run.env.MPS.Wait
	if wait <= 0 {
		wait = mpsQuitWait
	}
	st, err := ctl.Quit(ctx, d, wait)
	if err != nil {
		return fmt.Errorf("%s: %w", k.id, err)
	}
	if len(st.Killed) > 0 {
		k.log().Warn("MPS processes killed: they did not quit in time", "knob", k.id.String(), "pids", st.Killed, "wait", wait)
	}
	left, err := ctl.Left(d)
	if err != nil {
		return fmt.Errorf("%s: %w", k.id, err)
	}
	if len(left) > 0 {
		return fmt.Errorf("%s: MPS processes %v of %s still run after quit and kill", k.id, left, p.Pipe)
	}
	if err := ctl.Done(ctx, d); err != nil {
		return fmt.Errorf("%s: %w", k.id, err)
	}
	pg, err := k.remove(p)
	if err != nil {
		return fmt.Errorf("%s: %w", k.id, err)
	}
	if pg.Left {
		k.log().Warn("MPS directory moved aside but not wholly deleted yet; the next start or stop goes on with it",
			"knob", k.id.String(), "dir", p.Dir, "entries", pg.Entries, "why", pg.Err)
	}
	return nil
}

// owner is the uid of user: the job's (Env) when it is the job's user,
// else the system's user database.
func (k *mpsKnob) owner(name string) (int, error) {
	if name == k.run.env.User && k.run.env.UID >= 0 {
		return k.run.env.UID, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return 0, fmt.Errorf("%s: user %q: %w", k.id, name, err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return 0, fmt.Errorf("%s: user %q: uid %q", k.id, name, u.Uid)
	}
	return uid, nil
}

// withoutMPS words the warning of a job that runs without MPS because
// the GPU's daemon serves another user (Def.GoWithout): an MPS server
// serves one user at a time.
func withoutMPS(c plan.Conflict) string {
	uuid, _ := c.ID.GPU()
	what := "GPU"
	if isMIG(uuid) {
		what = "MIG device"
	}
	return fmt.Sprintf("%s %s: the MPS daemon serves %s (jobs %v); job %s (%s) runs without MPS: an MPS server serves one user at a time",
		what, uuid, c.Held, c.Others, c.Job, c.Wants)
}

// isMIG says whether uuid names a MIG device (MIG-<uuid>, or
// MIG-GPU-<uuid>/<gi>/<ci> before R470) rather than a whole GPU.
func isMIG(uuid string) bool { return strings.HasPrefix(uuid, "MIG-") }
