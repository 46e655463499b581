package probetools

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Waits of the ib_write_bw loopback.
var (
	// serverWait is how long the server has to start listening before
	// the client is started.
	serverWait = time.Second
	// serverLinger is how long the server has to end by itself once the
	// client has ended; then it is stopped.
	serverLinger = 10 * time.Second
)

// ibArgs are ib_write_bw's arguments on hca and port: a 5 s run (-D 5),
// no CPU frequency check (-F), bandwidth in Gb/s; the client adds the
// server's host, "localhost".
func ibArgs(hca string, port int, client bool) []string {
	a := []string{"-d", hca, "-F", "--report_gbits", "-D", "5", "-p", strconv.Itoa(port)}
	if client {
		a = append(a, "localhost")
	}
	return a
}

// runIBLoopback loops ib_write_bw back on one HCA: it starts the server
// (`ib_write_bw -d <hca> -F --report_gbits -D 5 -p <port>`), waits
// serverWait, runs the client (the same and "localhost") and reads the
// client's result line (see parseIBWriteBW). The server is stopped when
// it has not ended serverLinger after the client.
func runIBLoopback(ctx context.Context, t Tool, hca string, port int, timeout time.Duration) Result {
	args := ibArgs(hca, port, true)
	r := Result{Tool: t.Name, Version: t.Version, Args: args}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	begun := time.Now()
	server, err := start(ctx, timeout, t.Path, ibArgs(hca, port, false)...)
	if err != nil {
		r.Error = fmt.Sprintf("ib_write_bw server on %s: %v", hca, err)
		return r
	}
	select {
	case <-time.After(serverWait):
	case <-ctx.Done():
	}
	client := runTool(ctx, timeout, t.Path, args...)
	so := endServer(server)
	r.Seconds = time.Since(begun).Seconds()
	gbit, err := parseIBWriteBW(client.Stdout)
	switch {
	case client.TimedOut || err != nil:
		r.Error = failure(client, fmt.Sprintf("ib_write_bw client on %s", hca))
		if err != nil && client.Err == nil {
			r.Error += fmt.Sprintf(" (%v)", err)
		}
		if tail := lastLines(so.Stderr, 2); tail != "" {
			r.Error += "; server: " + tail
		}
	default:
		r.Values = map[string]float64{"bw_gbit_" + hca: gbit, "bw_gbps_" + hca: gbit / 8}
	}
	return r
}

// endServer waits serverLinger for the server to end by itself, then
// stops it, and returns how it ended.
func endServer(p *proc) outcome {
	done := make(chan outcome, 1)
	go func() { done <- p.wait() }()
	select {
	case o := <-done:
		return o
	case <-time.After(serverLinger):
		p.stop()
		return <-done
	}
}

// parseIBWriteBW reads the BW average (Gb/s, with --report_gbits) of
// ib_write_bw's result line: the first line of numbers after the header
// " #bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]"
// (perftest's RESULT_FMT_G; BW peak is 0.00 in a -D run).
func parseIBWriteBW(out string) (float64, error) {
	col := -1
	for _, line := range strings.Split(out, "\n") {
		if c := bwAverageColumn(line); c >= 0 {
			col = c
			continue
		}
		if col < 0 {
			continue
		}
		f := strings.Fields(line)
		if len(f) <= col {
			continue
		}
		if _, err := strconv.ParseUint(f[0], 10, 64); err != nil {
			continue
		}
		v, err := strconv.ParseFloat(f[col], 64)
		if err != nil {
			return 0, fmt.Errorf("reading BW average %q: %w", f[col], err)
		}
		return v, nil
	}
	if col < 0 {
		return 0, errors.New("no result header (BW average[Gb/sec])")
	}
	return 0, errors.New("no result line")
}

// bwAverageColumn is the field index of the BW average in a result header
// line in Gb/s, or -1. The header's names have spaces ("BW average"), so
// it is counted over the values' fields: #bytes, #iterations, BW peak,
// BW average.
func bwAverageColumn(line string) int {
	if !strings.Contains(line, "#bytes") || !strings.Contains(line, "BW average[Gb/sec]") {
		return -1
	}
	before := line[:strings.Index(line, "BW average[Gb/sec]")]
	n := 0
	for _, name := range []string{"#bytes", "iterations", "#sl", "BW peak"} {
		if strings.Contains(before, name) {
			n++
		}
	}
	return n
}
