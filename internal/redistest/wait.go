package redistest

import (
	"errors"
	"fmt"
	"time"
)

// readyTimeout bounds every wait for a server or cluster to become ready.
// A healthy redis-server answers within milliseconds; ten seconds leaves
// room for a loaded two-core CI machine without hanging a broken run.
const readyTimeout = 10 * time.Second

// Poll backoff: start fast because a local server is usually up within a few
// milliseconds, and cap low so that readiness is noticed promptly.
const (
	pollFirst = 2 * time.Millisecond
	pollMax   = 100 * time.Millisecond
)

// errExited reports that redis-server exited before it became ready. For a
// freshly chosen port the likely cause is that another process took the port
// between choosing and binding, so callers retry on a new port.
var errExited = errors.New("redistest: redis-server exited before it was ready")

// waitFor polls cond with exponential backoff until it returns nil, the
// process whose exit closes exited has gone (errExited), or readyTimeout
// passes (the last condition error, wrapped). A nil exited never fires.
func waitFor(exited <-chan struct{}, cond func() error) error {
	deadline := time.Now().Add(readyTimeout)
	delay := pollFirst
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-exited:
			return errExited
		case <-timer.C:
		}
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: not ready after %v: %w", readyTimeout, err)
		}
		timer.Reset(delay)
		delay = min(2*delay, pollMax)
	}
}
