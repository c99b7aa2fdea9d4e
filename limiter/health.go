package limiter

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
	// mu guards down, nextProbe and lastErr.
	mu   sync.Mutex
	down bool
	// downHint mirrors down for a lock-free fast path while Redis is up;
	// it is written only with mu held.
	downHint  atomic.Bool
	nextProbe time.Time
	lastErr   error

	interval time.Duration // between probes while down; immutable
	logger   *slog.Logger  // nil means silent; immutable
	policy   Policy        // for the log line; immutable
}

// attempt reports whether a call to Redis should be made at now. While
// Redis is down it allows one call per probe interval, and otherwise
// returns the error that took Redis down, for the policy to act on.
func (h *health) attempt(now time.Time) (bool, error) {
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
	// returned: calls are bounded by the decision timeout, so probes
	// cannot pile up.
	h.nextProbe = now.Add(h.interval)
	return true, nil
}

// failed records that a call failed at now with err.
func (h *health) failed(now time.Time, err error) {
	h.mu.Lock()
	wasDown := h.down
	h.down = true
	h.downHint.Store(true)
	h.lastErr = err
	h.nextProbe = now.Add(h.interval)
	h.mu.Unlock()
	// Logged after unlocking: a slog handler is a callback, and may be slow.
	if !wasDown && h.logger != nil {
		h.logger.Warn("limiter: redis unavailable", "policy", h.policy.String(), "retry_in", h.interval, "err", err)
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
	h.lastErr = nil
	h.mu.Unlock()
	if wasDown && h.logger != nil {
		h.logger.Info("limiter: redis available again")
	}
}
