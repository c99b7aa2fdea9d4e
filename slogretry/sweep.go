package slogretry

import (
	"context"
	"errors"
	"log/slog"

	"github.com/retrybudget/retrybudget/internal/redact"
	"github.com/retrybudget/retrybudget/ledger"
)

// sweep logs a ledger sweep: a summary, then each stuck action. A sweep has
// no request, so records carry the background context. A sweep that
// skipped records it could not decode (an error wrapping ledger.ErrCorrupt)
// logs the error and still what it listed.
func (l logObserver) sweep(r ledger.SweepReport) {
	ctx := context.Background()
	if r.Err != nil {
		if l.logger.Enabled(ctx, slog.LevelError) {
			l.logger.LogAttrs(ctx, slog.LevelError, "retrybudget: ledger sweep failed",
				slog.String("error", redact.ErrorText(r.Err)))
		}
		if !errors.Is(r.Err, ledger.ErrCorrupt) {
			return
		}
	}
	level := slog.LevelDebug
	if len(r.Stuck) > 0 {
		level = slog.LevelWarn
	}
	if l.logger.Enabled(ctx, level) {
		attrs := []slog.Attr{slog.Int("in_progress", r.InProgress), slog.Int("uncertain", r.Uncertain)}
		if len(r.Reconciled) > 0 {
			attrs = append(attrs, slog.Attr{Key: "reconciled", Value: slog.GroupValue(countResults(r.Reconciled)...)})
		}
		l.logger.LogAttrs(ctx, level, "retrybudget: ledger sweep", attrs...)
	}
	for i, rec := range r.Stuck {
		var rc *ledger.Reconciled
		if i < len(r.Reconciled) { // Reconcile returns one per record, in order
			rc = &r.Reconciled[i]
		}
		l.stuck(ctx, rec, rc)
	}
}

// stuck logs one stuck action and, when rc is not nil, what reconciling it
// did. An action settled as completed or failed needs no one; any other
// needs a person or the next sweep.
func (l logObserver) stuck(ctx context.Context, rec ledger.Record, rc *ledger.Reconciled) {
	level := slog.LevelWarn
	if rc != nil {
		if res := rc.Result(); res == "completed" || res == "failed" {
			level = slog.LevelInfo
		}
	}
	if !l.logger.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 9)
	attrs = l.appendAction(attrs, rec.Key)
	attrs = append(attrs, slog.String("state", rec.State.String()), slog.String("owner", rec.Owner))
	if rec.State == ledger.StateInProgress {
		attrs = append(attrs, slog.Time("lease_until", rec.LeaseUntil))
	}
	if rc != nil {
		attrs = append(attrs, slog.String("reconciled", rc.Result()))
		if rc.Err != nil {
			attrs = append(attrs, slog.String("error", redact.ErrorText(rc.Err)))
		}
	}
	l.logger.LogAttrs(ctx, level, "retrybudget: ledger stuck action", attrs...)
}

// countResults counts rcs by Result, in the order results first occur.
func countResults(rcs []ledger.Reconciled) []slog.Attr {
	var attrs []slog.Attr
next:
	for _, rc := range rcs {
		res := rc.Result()
		for i := range attrs {
			if attrs[i].Key == res {
				attrs[i].Value = slog.IntValue(int(attrs[i].Value.Int64()) + 1)
				continue next
			}
		}
		attrs = append(attrs, slog.Int(res, 1))
	}
	return attrs
}
