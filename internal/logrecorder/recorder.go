// Package logrecorder is a slog.Handler for tests that keeps every record as
// one line of text ("LEVEL message key=value ..."), so a test can assert
// what a component logged, and that it logged no secret.
package logrecorder

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
)

// Recorder is a slog.Handler that records every record. The zero value is
// ready to use; it is safe for concurrent use.
type Recorder struct {
	mu      sync.Mutex // guards records
	records []string
}

// Enabled implements slog.Handler: every level is recorded.
func (h *Recorder) Enabled(context.Context, slog.Level) bool { return true }

// WithAttrs implements slog.Handler; attributes given this way are dropped.
func (h *Recorder) WithAttrs([]slog.Attr) slog.Handler { return h }

// WithGroup implements slog.Handler; groups are ignored.
func (h *Recorder) WithGroup(string) slog.Handler { return h }

// Handle implements slog.Handler.
func (h *Recorder) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, b.String())
	return nil
}

// Reset forgets every record.
func (h *Recorder) Reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = nil
}

// All returns the records so far, oldest first.
func (h *Recorder) All() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.records...)
}
