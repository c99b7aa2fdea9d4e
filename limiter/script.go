package limiter

import (
	_ "embed"
	"errors"
	"fmt"
	"math"
	"time"
)

// decideLua takes one rate decision; see the comments at its top.
//
//go:embed decide.lua
var decideLua string

// cooldownLua pauses a boundary; see the comments at its top.
//
//go:embed cooldown.lua
var cooldownLua string

// errReply reports a script reply of an unexpected shape.
var errReply = errors.New("limiter: unexpected script reply")

// decision is decide.lua's reply: {granted} when it granted every
// request, else {granted, wait_us, reason, next_1, ..., next_L}.
type decision struct {
	granted int64
	// wait and reason are for the first request not granted; zero when
	// every request was granted.
	wait   time.Duration
	reason int64
	// next holds, per limit, µs until its next token after the grant;
	// see decide.lua. It shares the reply's backing array.
	next []any
}

// parseDecision reads decide.lua's reply to a call for want requests with
// nlim limits.
func parseDecision(v any, want, nlim int) (decision, error) {
	vals, ok := v.([]any)
	if ok && len(vals) == 1 {
		if n, ok := vals[0].(int64); ok && n == int64(want) {
			return decision{granted: n}, nil
		}
	}
	if !ok || len(vals) != 3+nlim {
		return decision{}, fmt.Errorf("%w: %v", errReply, v)
	}
	for _, x := range vals {
		n, ok := x.(int64)
		// A wait that is negative, or too long to be a duration, is not a
		// reply this script gives: treat it as a broken reply, not as data.
		// A limit's next token may be due long ago (negative, down to the
		// script's floor), but never further ahead than a wait.
		if !ok || n < -maxNextMicros || n > maxWaitMicros {
			return decision{}, fmt.Errorf("%w: %v", errReply, v)
		}
	}
	d := decision{granted: vals[0].(int64), wait: time.Duration(vals[1].(int64)) * time.Microsecond, reason: vals[2].(int64), next: vals[3:]}
	if d.granted < 0 || d.granted >= int64(want) || d.wait < 0 {
		return decision{}, fmt.Errorf("%w: %v", errReply, v)
	}
	return d, nil
}

// place returns the wait and the reason of the j-th request (from 0)
// among those the decision refused: as if the refused requests before it
// had queued, at the latest of each limit's next token plus j of its
// intervals. limits holds each limit's interval (µs) and reason code, in
// the order of the keys.
func (d decision) place(j int, limits []limitArg) (time.Duration, int64) {
	if d.reason == reasonCooldown || d.reason == reasonScopeCooldown || j == 0 {
		return d.wait, d.reason
	}
	var at, reason int64 = math.MinInt64, d.reason
	for i, x := range d.next {
		// j intervals, but no more than a wait can hold, so that the sum
		// cannot overflow (an interval is below 2^53 µs).
		step := limits[i].interval
		ahead := min(int64(j), maxWaitMicros/step+1) * step
		if p := x.(int64) + ahead; p > at {
			at, reason = p, limits[i].reason
		}
	}
	return time.Duration(min(max(at, 0), maxWaitMicros)) * time.Microsecond, reason
}

// maxNextMicros bounds how long ago decide.lua may say a limit's next
// token was due: its floor, 2^53, where its doubles stop being exact.
const maxNextMicros = int64(1) << 53

// maxWaitMicros bounds a wait in a reply: a year, far beyond any limit's
// period or MaxCooldown.
const maxWaitMicros = int64(365 * 24 * time.Hour / time.Microsecond)
