package budget

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// health tracks whether Redis answers, so that an outage costs one timeout
// per probe interval instead of one per decision, and is logged once when
// it starts and once when it ends.
type health struct {
	// mu guards down and nextProbe.
	mu        sync.Mutex
	down      bool
	nextProbe time.Time
	// downHint mirrors down for a lock-free fast path while Redis is up;
	// it is written only with mu held.
	downHint atomic.Bool

	interval time.Duration // between probes while down; immutable
	logger   *slog.Logger  // nil means silent; immutable
	policy   Policy        // for the log line; immutable
}

// isDown reports, without locking, whether Redis was down at the last call.
func (h *health) isDown() bool { return h.downHint.Load() }

// attempt reports whether a call to Redis should be made at now: always
// while Redis is up, and once per probe interval while it is down.
func (h *health) attempt(now time.Time) bool {
	if !h.downHint.Load() {
		return true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.down {
		return true
	}
	if now.Before(h.nextProbe) {
		return false
	}
	// One probe per interval, whether or not the previous one has
	// returned: each is bounded by the timeout, so they cannot pile up.
	h.nextProbe = now.Add(h.interval)
	return true
}

// probeAt returns when Redis may next be probed while down. It changes
// whenever a call probes or fails, which tests use to tell a decision that
// tried Redis from one that did not.
func (h *health) probeAt() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.nextProbe
}

// failed records that a call failed at now with err.
func (h *health) failed(now time.Time, err error) {
	h.mu.Lock()
	wasDown := h.down
	h.down = true
	h.downHint.Store(true)
	h.nextProbe = now.Add(h.interval)
	h.mu.Unlock()
	// Logged after unlocking: a slog handler is a callback, and may be slow.
	if !wasDown && h.logger != nil {
		h.logger.Warn("budget: redis unavailable", "policy", h.policy.String(), "retry_in", h.interval, "err", err)
	}
}

// succeeded records that a call succeeded.
func (h *health) succeeded() {
	if !h.downHint.Load() {
		return
	}
	h.mu.Lock()
	wasDown := h.down
	h.down = false
	h.downHint.Store(false)
	h.mu.Unlock()
	if wasDown && h.logger != nil {
		h.logger.Info("budget: redis available again")
	}
}
