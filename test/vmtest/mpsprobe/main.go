// Command mpsprobe drives lib/mps in the test VM exactly as the mps knob
// does on a node whose PID 1 is systemd (lib/knob/mps.go up and down,
// with the launcher lib/hook's mpsEnv picks there, mps.Systemd): the
// vmtest scenario TestMPSThroughSystemd copies it in, static
// (CGO_ENABLED=0), with the simulated nvidia-cuda-mps-control
// (internal/mpssim). Each run is one hook's share, and exits as a hook
// does, leaving the daemon to systemd:
//
//	mpsprobe start -user alice -uuid GPU-...   mps.Dirs, mps.Create, Exec.Start
//	mpsprobe stop  -user alice -uuid GPU-...   Exec.Quit, Exec.Left, Exec.Done, mps.Remove
//
// -launcher none runs the daemon with no launcher (Exec's own `-d`, a
// child in the caller's cgroup), the scenario's control case.
//
// Each prints one JSON object on stdout (the unit, the daemon's pid, what
// Quit did, this process's own cgroup from /proc/self/cgroup); a failure
// exits 1 with the error on stderr.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"gpuprep/lib/host"
	"gpuprep/lib/mps"
)

// Result is what one run prints.
type Result struct {
	Unit    string       `json:"unit"`
	Pipe    string       `json:"pipe"`
	Dir     string       `json:"dir"`
	PID     int          `json:"pid,omitempty"`     // start: the daemon's
	Stopped *mps.Stopped `json:"stopped,omitempty"` // stop: what Quit did
	Left    []int        `json:"left,omitempty"`    // stop: still running after Quit
	Self    string       `json:"self_cgroup"`       // this process's cgroup
}

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "start" && os.Args[1] != "stop") {
		fmt.Fprintln(os.Stderr, "usage: mpsprobe start|stop -user NAME -uuid GPU-... [-bin PATH] [-base DIR] [-wait DUR]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	userName := fs.String("user", "", "the job's user")
	uuid := fs.String("uuid", "", "the GPU's UUID")
	bin := fs.String("bin", "/usr/local/bin/"+mps.ControlName, "nvidia-cuda-mps-control")
	base := fs.String("base", mps.DefaultBase, "the daemons' directory")
	wait := fs.Duration("wait", 10*time.Second, "stop: how long quit is waited for before the kill")
	launcher := fs.String("launcher", "systemd", "systemd (mps.Systemd) or none (the caller's child)")
	fs.Parse(os.Args[2:])
	var l mps.Launcher
	switch *launcher {
	case "systemd":
		l = mps.Systemd{}
	case "none":
	default:
		fmt.Fprintf(os.Stderr, "mpsprobe: -launcher %q: want systemd or none\n", *launcher)
		os.Exit(2)
	}
	res, err := run(os.Args[1], *userName, *uuid, *bin, *base, *wait, l)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mpsprobe:", err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(res)
}

func run(op, userName, uuid, bin, base string, wait time.Duration, l mps.Launcher) (*Result, error) {
	key, err := mps.Key([]string{uuid})
	if err != nil {
		return nil, err
	}
	p, err := mps.Dirs(base, userName, key)
	if err != nil {
		return nil, err
	}
	u, err := user.Lookup(userName)
	if err != nil {
		return nil, err
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return nil, fmt.Errorf("user %s: uid %q", userName, u.Uid)
	}
	d := mps.Daemon{UUIDs: []string{uuid}, Paths: p, UID: uid}
	// As lib/knob/mps.go's control() makes it, with the launcher
	// lib/hook's mpsEnv gives where PID 1 is systemd.
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	e := &mps.Exec{Bin: bin, Proc: host.NewRoot("/"), Launcher: l, Log: log}
	self, _ := os.ReadFile("/proc/self/cgroup")
	res := &Result{Unit: mps.UnitName(d), Pipe: p.Pipe, Dir: p.Dir, Self: strings.TrimPrefix(strings.TrimSpace(string(self)), "0::")}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	switch op {
	case "start":
		if err := mps.Create(p, uid); err != nil {
			return nil, err
		}
		if res.PID, err = e.Start(ctx, d); err != nil {
			return nil, err
		}
	case "stop":
		st, err := e.Quit(ctx, d, wait)
		if err != nil {
			return nil, err
		}
		res.Stopped = &st
		if res.Left, err = e.Left(d); err != nil {
			return nil, err
		}
		if len(res.Left) > 0 {
			return res, fmt.Errorf("processes %v of %s still run after quit and kill", res.Left, p.Pipe)
		}
		if err := e.Done(ctx, d); err != nil {
			return nil, err
		}
		if _, err := mps.Remove(p); err != nil {
			return nil, err
		}
	}
	return res, nil
}
