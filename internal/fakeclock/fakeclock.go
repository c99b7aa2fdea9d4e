// Package fakeclock is the clock the tests hand to code with a clock seam
// (a Now method or a func() time.Time): it moves only when told to.
package fakeclock

import (
	"sync"
	"time"
)

// Clock is a clock that moves only when told to. It is safe for
// concurrent use. Its zero value reads the zero time; New sets another.
type Clock struct {
	mu  sync.Mutex // guards now
	now time.Time
}

// New returns a Clock that reads now until it is advanced.
func New(now time.Time) *Clock { return &Clock{now: now} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock d forward (back when d is negative).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
