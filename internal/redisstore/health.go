package redisstore

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Tracker is the health of one Redis as seen by one component, for the
// packages (limiter, budget) that fall back to a local policy while it does
// not answer. An outage costs one timeout per probe interval instead of one
// per decision, and is logged once when it starts and once when it ends. It is safe
// for concurrent use; construct it with New.
type Tracker struct {
	// mu guards down, nextProbe and lastErr.
	mu        sync.Mutex
	down      bool
	nextProbe time.Time
	lastErr   error
	// downHint mirrors down for a lock-free fast path while Redis is up;
	// it is written only with mu held.
	downHint atomic.Bool

	component string        // log prefix, such as "limiter"; immutable
	policy    string        // for the log line; immutable
	interval  time.Duration // between probes while down; immutable
	logger    *slog.Logger  // nil means silent; immutable
}

// NewTracker returns a Tracker for component (the log prefix) that probes a down
// Redis once per interval and logs to logger (nil means silent), naming the
// fallback policy in force.
func NewTracker(component, policy string, interval time.Duration, logger *slog.Logger) *Tracker {
	return &Tracker{component: component, policy: policy, interval: interval, logger: logger}
}

// Down reports, without locking, whether Redis was down at the last call.
func (h *Tracker) Down() bool { return h.downHint.Load() }

// Attempt reports whether a call to Redis should be made at now: always
// while Redis is up, and once per probe interval while it is down. When it
// reports false it returns the error that took Redis down, for the policy
// to act on.
func (h *Tracker) Attempt(now time.Time) (bool, error) {
	if !h.downHint.Load() {
		return true, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.down {
		return true, nil
	}
	if now.Before(h.nextProbe) {
		return false, h.lastErr
	}
	// One probe per interval, whether or not the previous one has
	// returned: calls are bounded by their timeout, so probes cannot pile
	// up.
	h.nextProbe = now.Add(h.interval)
	return true, nil
}

// NextProbe returns when Redis may next be probed while down. It changes
// whenever a call probes or fails, which tests use to tell a decision that
// tried Redis from one that did not.
func (h *Tracker) NextProbe() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.nextProbe
}

// Failed records that a call failed at now with err.
func (h *Tracker) Failed(now time.Time, err error) {
	h.mu.Lock()
	wasDown := h.down
	h.down = true
	h.downHint.Store(true)
	h.lastErr = err
	h.nextProbe = now.Add(h.interval)
	h.mu.Unlock()
	// Logged after unlocking: a slog handler is a callback, and may be slow.
	if !wasDown && h.logger != nil {
		h.logger.Warn(h.component+": redis unavailable", "policy", h.policy, "retry_in", h.interval, "err", err)
	}
}

// Succeeded records that a call succeeded.
func (h *Tracker) Succeeded() {
	if !h.downHint.Load() {
		return
	}
	h.mu.Lock()
	wasDown := h.down
	h.down = false
	h.downHint.Store(false)
	h.lastErr = nil
	h.mu.Unlock()
	if wasDown && h.logger != nil {
		h.logger.Info(h.component + ": redis available again")
	}
}
