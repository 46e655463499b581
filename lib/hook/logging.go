package hook

import (
	"context"
	"io"
	"log/slog"
	"log/syslog"
	"os"
)

// newLogger logs to the log file (appended, created 0640) and to syslog
// (facility daemon, tag prog), and also to stderr when not run by slurmd:
// under slurmd the first stderr line is the drain reason, so nothing else may
// go there. Sinks that cannot be opened are skipped.
func newLogger(prog, logFile string, level slog.Level, underSlurm bool, stderr io.Writer) (*slog.Logger, func()) {
	var handlers []slog.Handler
	var closers []func()
	opts := &slog.HandlerOptions{Level: level}
	if logFile != "" {
		if f, err := os.OpenFile(logFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640); err == nil {
			handlers = append(handlers, slog.NewTextHandler(f, opts).WithAttrs([]slog.Attr{slog.String("prog", prog)}))
			closers = append(closers, func() { f.Close() })
		}
	}
	if w, err := syslog.New(syslog.LOG_DAEMON|syslog.LOG_INFO, prog); err == nil {
		handlers = append(handlers, slog.NewTextHandler(w, opts))
		closers = append(closers, func() { w.Close() })
	}
	if !underSlurm {
		handlers = append(handlers, slog.NewTextHandler(stderr, opts))
	}
	return slog.New(fanout(handlers)), func() {
		for _, c := range closers {
			c()
		}
	}
}

// fanout sends every record to each handler.
type fanout []slog.Handler

func (f fanout) Enabled(ctx context.Context, l slog.Level) bool {
	for _, h := range f {
		if h.Enabled(ctx, l) {
			return true
		}
	}
	return false
}

func (f fanout) Handle(ctx context.Context, r slog.Record) error {
	for _, h := range f {
		if h.Enabled(ctx, r.Level) {
			_ = h.Handle(ctx, r.Clone())
		}
	}
	return nil
}

func (f fanout) WithAttrs(a []slog.Attr) slog.Handler {
	out := make(fanout, len(f))
	for i, h := range f {
		out[i] = h.WithAttrs(a)
	}
	return out
}

func (f fanout) WithGroup(name string) slog.Handler {
	out := make(fanout, len(f))
	for i, h := range f {
		out[i] = h.WithGroup(name)
	}
	return out
}
