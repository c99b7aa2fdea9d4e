package budget

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// budgetLua credits deposits and takes one decision; see the comments at
// its top.
//
//go:embed budget.lua
var budgetLua string

// script is budget.lua with the rule's arguments rendered once.
type script struct {
	lua *redis.Script
	// rule holds ARGV[3..6]: percent, floor, slot width (µs) and TTL (ms).
	// Floats are rendered with the shortest exact representation, so the
	// script compares the very doubles Local compares. They are
	// boxed once here, not on every call.
	rule [4]any
}

func newScript(r Rule) *script {
	width := max(r.Window.Microseconds()/windowSlots, 1)
	// Two windows, and at least the one second in which an idle floor
	// bucket refills completely, so expiry never forgets anything that
	// still matters.
	ttl := max(2*r.Window, time.Second)
	return &script{
		lua: redis.NewScript(budgetLua),
		rule: [4]any{
			strconv.FormatFloat(r.Percent, 'g', -1, 64),
			strconv.FormatFloat(r.MinRetriesPerSec, 'g', -1, 64),
			strconv.FormatInt(width, 10),
			strconv.FormatInt(ttl.Milliseconds(), 10),
		},
	}
}

// reply is budget.lua's answer.
type reply struct {
	allowed           bool
	deposits, retries int64
}

// call runs budget.lua on key, crediting credit deposits and, with
// withdraw, deciding one retry. It runs EVALSHA, falling back to EVAL when
// the server does not have the script cached.
func (s *script) call(ctx context.Context, rdb redis.UniversalClient, key string, credit int64, withdraw bool) (reply, error) {
	var w any = "0"
	if withdraw {
		w = "1"
	}
	v, err := s.lua.Run(ctx, rdb, []string{key}, credit, w, s.rule[0], s.rule[1], s.rule[2], s.rule[3]).Result()
	if err != nil {
		return reply{}, err
	}
	return parseReply(v)
}

// parseReply reads budget.lua's reply {allowed, deposits, retries}.
func parseReply(v any) (reply, error) {
	vals, ok := v.([]any)
	if !ok || len(vals) != 3 {
		return reply{}, fmt.Errorf("%w: %v", errReply, v)
	}
	var n [3]int64
	for i, x := range vals {
		if n[i], ok = x.(int64); !ok {
			return reply{}, fmt.Errorf("%w: %v", errReply, v)
		}
	}
	return reply{allowed: n[0] == 1, deposits: n[1], retries: n[2]}, nil
}
