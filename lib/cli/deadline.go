package cli

import (
	"context"
	"time"

	"gpuprep/lib/config"
)

// deadlineGrace is how long RunDeadline still waits for fn once the
// deadline has passed, for an fn that was about to return anyway.
const deadlineGrace = 200 * time.Millisecond

// RunDeadline runs fn with a context that expires after d and returns fn's
// exit code. If fn has not returned shortly after the deadline, RunDeadline
// returns timedOut without waiting for it: a hung call (NVML, a file system)
// never hangs the program. fn's goroutine is left running, so the caller
// should report the timeout and exit.
func RunDeadline(d time.Duration, fn func(ctx context.Context) int) (code int, timedOut bool) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	done := make(chan int, 1)
	go func() { done <- fn(ctx) }()
	select {
	case c := <-done:
		return c, false
	case <-ctx.Done():
		time.Sleep(deadlineGrace)
		select {
		case c := <-done:
			return c, false
		default:
		}
		return ExitMismatch, true
	}
}

// Deadline is the deadline of one run of a program the config bounds (the
// hooks, gpuprep-health): general.deadline, 30 s when unset.
func Deadline(cfg *config.Config) time.Duration {
	if cfg.General.Deadline > 0 {
		return cfg.General.Deadline
	}
	return 30 * time.Second
}
