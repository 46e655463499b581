package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"log/syslog"
	"os"
	"strings"
	"sync"
)

// SyslogWriter is what the logger needs of syslog: one method per priority.
// log/syslog's *Writer satisfies it; tests fake it.
type SyslogWriter interface {
	Debug(m string) error
	Info(m string) error
	Warning(m string) error
	Err(m string) error
	Close() error
}

// openSyslog connects to the local syslog (facility daemon, tag prog);
// tests replace it.
var openSyslog = func(prog string) (SyslogWriter, error) {
	return syslog.New(syslog.LOG_DAEMON|syslog.LOG_INFO, prog)
}

// Logs are the loggers of a program run by a daemon (SinkLogger).
type Logs struct {
	// Log writes to every sink: the log file, syslog and, unless quiet,
	// stderr.
	Log *slog.Logger
	// Daemon writes to the log file and syslog only: for what the program
	// also prints on stderr itself (its one-line failure), so that a
	// terminal shows it once.
	Daemon *slog.Logger
	// Close closes the sinks.
	Close func()
}

// SinkLogger is the logger of a program run by a daemon: it logs to logFile
// (appended, created 0640; none when empty), to syslog (facility daemon, tag
// prog, unless noSyslog) and also to stderr unless quietStderr (a Slurm hook
// under slurmd, where the first stderr line is the drain reason, so nothing
// else may go there). Syslog gets each record at the priority of its level
// (debug LOG_DEBUG, info LOG_INFO, warn LOG_WARNING, error LOG_ERR) and
// without a time= field (syslog stamps it). Sinks that cannot be opened are
// skipped; a log file that cannot be opened is one warning on the sinks
// left (syslog, stderr), naming the file and the error.
func SinkLogger(prog, logFile string, level slog.Level, quietStderr, noSyslog bool, stderr io.Writer) Logs {
	var daemon []slog.Handler
	var closers []func()
	opts := &slog.HandlerOptions{Level: level}
	var fileErr error
	if logFile != "" {
		f, err := os.OpenFile(logFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
		if err == nil {
			daemon = append(daemon, slog.NewTextHandler(f, opts).WithAttrs([]slog.Attr{slog.String("prog", prog)}))
			closers = append(closers, func() { f.Close() })
		} else {
			fileErr = err
		}
	}
	var left []string // the sinks logging goes to instead of the file
	if !noSyslog {
		if w, err := openSyslog(prog); err == nil {
			daemon = append(daemon, newSyslogHandler(w, level))
			closers = append(closers, func() { w.Close() })
			left = append(left, "syslog")
		}
	}
	all := daemon
	if !quietStderr {
		all = append(append([]slog.Handler{}, daemon...), slog.NewTextHandler(stderr, opts))
		left = append(left, "stderr")
	}
	logs := Logs{Log: slog.New(fanout(all)), Daemon: slog.New(fanout(daemon)), Close: func() {
		for _, c := range closers {
			c()
		}
	}}
	if fileErr != nil {
		logs.Log.Warn(logFileWarning(logFile, fileErr, left))
	}
	return logs
}

// logFileWarning is the one line saying that the log file (general.log_file)
// cannot be opened, why (the error without the path it repeats), and where
// the log goes instead.
func logFileWarning(logFile string, err error, left []string) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Sprintf("log file %s (general.log_file) cannot be opened: %v; logging to %s only", logFile, err, strings.Join(left, " and "))
}

// syslogHandler formats a record as the text handler does, less its time,
// and hands it to syslog at the priority of its level.
type syslogHandler struct {
	w   SyslogWriter
	mu  *sync.Mutex
	buf *bytes.Buffer
	h   slog.Handler // a text handler writing into buf
}

func newSyslogHandler(w SyslogWriter, level slog.Level) *syslogHandler {
	buf := new(bytes.Buffer)
	dropTime := func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}
	return &syslogHandler{w: w, mu: new(sync.Mutex), buf: buf,
		h: slog.NewTextHandler(buf, &slog.HandlerOptions{Level: level, ReplaceAttr: dropTime})}
}

func (s *syslogHandler) Enabled(ctx context.Context, l slog.Level) bool { return s.h.Enabled(ctx, l) }

func (s *syslogHandler) Handle(ctx context.Context, r slog.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Reset()
	if err := s.h.Handle(ctx, r); err != nil {
		return err
	}
	msg := strings.TrimSuffix(s.buf.String(), "\n")
	switch {
	case r.Level >= slog.LevelError:
		return s.w.Err(msg)
	case r.Level >= slog.LevelWarn:
		return s.w.Warning(msg)
	case r.Level >= slog.LevelInfo:
		return s.w.Info(msg)
	}
	return s.w.Debug(msg)
}

func (s *syslogHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return &syslogHandler{w: s.w, mu: s.mu, buf: s.buf, h: s.h.WithAttrs(a)}
}

func (s *syslogHandler) WithGroup(name string) slog.Handler {
	return &syslogHandler{w: s.w, mu: s.mu, buf: s.buf, h: s.h.WithGroup(name)}
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
