package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// sweepBatch is the SCAN COUNT hint and so the size of each read pipeline.
const sweepBatch = 256

// Sweep implements Store.
//
// Records are spread over every slot by design, so no one key can index
// them in a cluster (a script may only touch keys of one slot, and an index
// updated by a second command could miss a record when a process dies
// between the two). Sweep therefore SCANs every master of a cluster, every
// shard of a ring, or the single server, for keys under the store's
// prefix, and reads each batch in one pipeline together with that node's
// TIME. SCAN returns every key that exists for the whole scan, so an action
// that is stuck when Sweep starts and still stuck when it ends is listed;
// one that changes meanwhile may or may not be.
//
// The cost grows with the keys in the database, not with the stuck ones:
// run Sweep from an operator tool or a reconciler loop, never per request.
// With a limit, Sweep stops scanning once it has enough, so which records
// it returns is not specified beyond being stuck.
//
// A record that cannot be decoded (see Store.Sweep) is skipped: Sweep
// lists the others and returns them with an error wrapping ErrCorrupt
// that names each skipped key.
func (r *Redis) Sweep(ctx context.Context, limit int) ([]Record, error) {
	var (
		mu      sync.Mutex // guards out and skipped; ForEachMaster calls scan concurrently
		out     []Record
		skipped []error
	)
	pattern := globEscape(r.prefix) + "{*}"
	scan := func(ctx context.Context, c redis.Cmdable) error {
		var cursor uint64
		for {
			keys, next, err := c.Scan(ctx, cursor, pattern, sweepBatch).Result()
			if err != nil {
				return err
			}
			if len(keys) > 0 {
				recs, bad, err := r.stuckIn(ctx, c, keys)
				if err != nil {
					return err
				}
				mu.Lock()
				out = append(out, recs...)
				skipped = append(skipped, bad...)
				enough := limit > 0 && len(out) >= limit
				mu.Unlock()
				if enough {
					return nil
				}
			}
			if next == 0 {
				return nil
			}
			cursor = next
		}
	}

	var err error
	switch c := r.client.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return scan(ctx, n) })
	case *redis.Ring:
		err = c.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error { return scan(ctx, n) })
	default:
		err = scan(ctx, r.client)
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: redis sweep: %w", err)
	}
	sortRecords(out)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	if len(skipped) > 0 {
		return out, fmt.Errorf("ledger: redis sweep: skipped %d records that cannot be decoded: %w", len(skipped), errors.Join(skipped...))
	}
	return out, nil
}

// stuckIn reads keys from one node and returns the stuck records among
// them, judged by that node's clock, and the decoding error of each record
// it skipped. err is the node's error.
func (r *Redis) stuckIn(ctx context.Context, c redis.Cmdable, keys []string) (stuck []Record, skipped []error, err error) {
	var tm *redis.TimeCmd
	reads := make([]*redis.MapStringStringCmd, len(keys))
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		tm = p.Time(ctx)
		for i, k := range keys {
			reads[i] = p.HGetAll(ctx, k)
		}
		return nil
	}); err != nil {
		return nil, nil, err
	}
	// The scripts judge leases in whole milliseconds; so does Sweep.
	now := time.UnixMilli(tm.Val().UnixMilli())
	for i, cmd := range reads {
		fields := cmd.Val()
		if len(fields) == 0 {
			continue // expired between SCAN and read
		}
		rec, err := decodeRecord(fields, r.cfg.EncryptionKeys)
		if err != nil {
			skipped = append(skipped, fmt.Errorf("key %s: %w", keys[i], err))
			continue
		}
		if rec.stuck(now) && !now.After(rec.ExpiresAt) { // past it: kept for ExpiryGrace only
			stuck = append(stuck, rec)
		}
	}
	return stuck, skipped, nil
}

// globEscape escapes the characters SCAN MATCH treats as a pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch c {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}
