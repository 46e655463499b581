package cli

import (
	"context"
	"io"
	"log/slog"
	"log/syslog"
	"os"
)

// SinkLogger is the logger of a program run by a daemon: it logs to logFile
// (appended, created 0640; none when empty) and to syslog (facility daemon,
// tag prog), and also to stderr unless quietStderr (a Slurm hook under
// slurmd, where the first stderr line is the drain reason, so nothing else
// may go there). Sinks that cannot be opened are skipped. The returned
// function closes them.
func SinkLogger(prog, logFile string, level slog.Level, quietStderr bool, stderr io.Writer) (*slog.Logger, func()) {
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
	if !quietStderr {
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
