package limiter

import (
	_ "embed"
	"errors"
	"fmt"
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

// parseDecision reads decide.lua's reply {granted, wait_us, reason}.
func parseDecision(v any) (granted int64, wait time.Duration, reason int64, err error) {
	vals, ok := v.([]any)
	if !ok || len(vals) != 3 {
		return 0, 0, 0, fmt.Errorf("%w: %v", errReply, v)
	}
	var n [3]int64
	for i, x := range vals {
		if n[i], ok = x.(int64); !ok {
			return 0, 0, 0, fmt.Errorf("%w: %v", errReply, v)
		}
	}
	// A wait that is negative, or too long to be a duration, is not a
	// reply this script gives: treat it as a broken reply, not as data.
	if n[1] < 0 || n[1] > maxWaitMicros {
		return 0, 0, 0, fmt.Errorf("%w: wait %dµs out of range", errReply, n[1])
	}
	return n[0], time.Duration(n[1]) * time.Microsecond, n[2], nil
}

// maxWaitMicros bounds a wait in a reply: a year, far beyond any limit's
// period or MaxCooldown.
const maxWaitMicros = int64(365 * 24 * time.Hour / time.Microsecond)
