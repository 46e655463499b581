package healthcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/user"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gpuprep/lib/cli"
	"gpuprep/lib/config"
	"gpuprep/lib/gpu"
	"gpuprep/lib/health"
	"gpuprep/lib/host"
	"gpuprep/lib/slurm"
	"gpuprep/lib/state"
	"gpuprep/lib/textfmt"
)

// euid is the effective user id (a test stands in for a user).
var euid = os.Geteuid

// maxClearReason bounds --reason: it goes into the state file and the log.
const maxClearReason = 500

// checkClearFlags checks --clear and --reason before anything is read:
// each needs the other, and the reason is one line of text.
func checkClearFlags(f *healthFlags) error {
	reason := strings.TrimSpace(f.reason)
	switch {
	case f.clear == "" && f.reason != "":
		return errors.New("--reason goes with --clear GPU|all")
	case f.clear == "":
		return nil
	case reason == "":
		return errors.New("--clear needs --reason TEXT: why the GPU is fit again (it is recorded with who cleared it)")
	case len(reason) > maxClearReason || strings.ContainsAny(reason, "\n\r\x00"):
		return fmt.Errorf("--reason must be one line of at most %d bytes", maxClearReason)
	case f.dryRun:
		return errors.New("--clear cannot be a --dry-run: it only changes the health state")
	}
	f.reason = reason
	return nil
}

// clearResult is what --clear did, for --json.
type clearResult struct {
	By      string         `json:"by"`
	Reason  string         `json:"reason"`
	Cleared []health.Clear `json:"cleared"`
}

// clearProgram is gpuprep-health --clear GPU|all --reason TEXT: under the
// node lock, it ends the Xid history of the GPU (every GPU's for "all")
// in the spool's health state, so no fatal Xid stands against it, and
// records who cleared which Xids and why in the state (health.json's
// "clears"), the log and gpuprep-health.prom (gpuprep_xid_clears_total).
// It changes nothing in Slurm: the next gpuprep-health run resumes a node
// gpuprep drained once every check passes. Root only (the spool is
// root's).
func clearProgram(ctx context.Context, prog string, f *healthFlags, cfg *config.Config, log *slog.Logger, getenv func(string) string, stdout, stderr io.Writer) int {
	if euid() != 0 {
		return cli.Fail(stderr, prog, cli.ExitBadInput, errors.New("--clear needs root: the health state is root's"))
	}
	dir := f.stateDir
	if dir == "" {
		dir = cfg.General.StateDir
	}
	root := f.common.HostRoot()
	inv := inventory(f, cfg, log)
	buses, err := clearTarget(f.clear, inv)
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitBadInput, err)
	}
	sp, err := state.Open(dir)
	if err != nil {
		return cli.Fail(stderr, prog, cli.ExitMismatch, err)
	}
	defer sp.Close()
	res := clearResult{By: clearedBy(getenv, root), Reason: f.reason}
	res.Cleared, err = clearUnderLock(ctx, sp, buses, res.By, res.Reason)
	if err != nil {
		log.Error("Xid history not cleared", "gpu", f.clear, "by", res.By, "err", err)
		return cli.Fail(stderr, prog, cli.ExitMismatch, err)
	}
	for _, c := range res.Cleared {
		log.Warn("Xid history cleared by an admin", "gpu", c.BusID, "xids", c.Codes, "by", c.By, "reason", c.Reason)
	}
	if len(res.Cleared) > 0 {
		recordClearMetrics(root, cfg, sp, slurm.NodeName(root, f.node, getenv), res.Cleared, inv, log)
	}
	writeClear(stdout, f, res, inv)
	return cli.ExitOK
}

// clearUnderLock clears the GPUs' Xid histories in the spool's health
// state under the node lock the hooks share (the state is theirs too).
func clearUnderLock(ctx context.Context, sp *state.Spool, buses []string, by, reason string) ([]health.Clear, error) {
	unlock, err := sp.Lock(ctx)
	if err != nil {
		return nil, fmt.Errorf("node lock: %w", err)
	}
	defer unlock()
	st, err := health.LoadState(sp)
	if err != nil {
		return nil, err
	}
	cleared := st.ClearAdmin(buses, by, reason, time.Now())
	if len(cleared) == 0 {
		return nil, nil
	}
	return cleared, st.Save(sp)
}

// inventory is the GPUs the backend lists, to name a GPU by index or UUID
// and to label the metrics; none when the backend cannot list them (a
// GPU that fell off the bus can still be named by its bus id).
func inventory(f *healthFlags, cfg *config.Config, log *slog.Logger) []health.GPURef {
	b, err := f.common.OpenGPU(cfg)
	if err != nil {
		log.Debug("--clear: no GPU backend, GPUs by bus id only", "err", err)
		return nil
	}
	gpu.Light(b)
	devs, err := b.Devices()
	if err != nil {
		log.Debug("--clear: GPUs not listed, GPUs by bus id only", "err", err)
		return nil
	}
	var out []health.GPURef
	for _, d := range devs {
		out = append(out, health.GPURef{Index: d.Index, UUID: d.UUID, BusID: d.BusID})
	}
	return out
}

// canonicalBusRE is a canonical PCI bus id (gpu.CanonicalBusID).
var canonicalBusRE = regexp.MustCompile(`^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)

// clearTarget is the bus ids --clear names: nil for "all"; a PCI bus id
// as given (listed or not: NVML may no longer list a lost GPU); an index
// or a UUID looked up in inv.
func clearTarget(arg string, inv []health.GPURef) ([]string, error) {
	if arg == "all" {
		return nil, nil
	}
	if b := gpu.CanonicalBusID(arg); canonicalBusRE.MatchString(b) {
		return []string{b}, nil
	}
	idx, err := strconv.Atoi(arg)
	for _, g := range inv {
		if err == nil && g.Index == idx || strings.EqualFold(g.UUID, arg) {
			return []string{g.BusID}, nil
		}
	}
	if len(inv) == 0 {
		return nil, fmt.Errorf("--clear %q: the GPU backend lists no GPUs to look it up in; name the GPU by its PCI bus id (0000:18:00.0) or clear all", arg)
	}
	return nil, fmt.Errorf("--clear %q: no such GPU (give an index 0-%d, a PCI bus id, a UUID, or all)", arg, len(inv)-1)
}

// clearedBy is who runs --clear: SUDO_USER (sudo sets it to the user who
// ran sudo), else the name of this process's login uid
// (/proc/self/loginuid, which su and sudo keep), else "uid N".
func clearedBy(getenv func(string) string, root host.Root) string {
	if u := getenv("SUDO_USER"); u != "" {
		return textfmt.Head(u, 200)
	}
	if b, err := root.ReadFile("/proc/self/loginuid"); err == nil {
		if id := strings.TrimSpace(string(b)); id != "" && id != "4294967295" {
			if u, err := user.LookupId(id); err == nil {
				return u.Username
			}
			return "uid " + id
		}
	}
	return "uid " + strconv.Itoa(os.Getuid())
}

// writeClear prints what --clear did: one line per GPU cleared, or that
// there was nothing to clear.
func writeClear(w io.Writer, f *healthFlags, res clearResult, inv []health.GPURef) {
	if f.common.JSON {
		cli.WriteJSON(w, res)
		return
	}
	if len(res.Cleared) == 0 {
		fmt.Fprintf(w, "nothing to clear: no Xid history for %s\n", f.clear)
		return
	}
	for _, c := range res.Cleared {
		name := "GPU ? (" + c.BusID + ")"
		for _, g := range inv {
			if g.BusID == c.BusID {
				name = fmt.Sprintf("GPU %d (%s)", g.Index, g.BusID)
			}
		}
		var codes []string
		for _, x := range c.Codes {
			codes = append(codes, "Xid "+strconv.Itoa(x))
		}
		fmt.Fprintf(w, "cleared %s: %s (by %s: %s)\n", name, strings.Join(codes, ", "), c.By, c.Reason)
	}
	fmt.Fprintln(w, "the next gpuprep-health run resumes a node gpuprep drained once every check passes")
}
