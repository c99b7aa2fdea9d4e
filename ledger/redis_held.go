package ledger

import (
	"context"
	_ "embed" // the index scripts
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/heldadd.lua
	heldAddLua string
	//go:embed lua/heldpage.lua
	heldPageLua string
	//go:embed lua/heldprune.lua
	heldPruneLua string
)

// MaxHeldEntries caps the Redis store's held index: past it, entering an
// action drops the oldest entry, whose action only Sweep then finds.
const MaxHeldEntries = 1_000_000

// heldRounds bounds the index reads of one page that drops stale entries:
// each round reads what the stale ones left empty.
const heldRounds = 4

// heldKeys names the held index: a sorted set of entries and a hash of
// their versions, one hash tag, so one cluster slot holds both. Neither
// matches Sweep's pattern, which wants the brace right after the prefix.
func (r *Redis) heldKeys() []string {
	return []string{r.prefix + "held:entries{held}", r.prefix + "held:versions{held}"}
}

// indexHeld enters k in the held index. Fail calls it before the record
// becomes uncertain, so a held record never lacks an entry; the entry of a
// Fail that then found its token stale is dropped when listed.
func (r *Redis) indexHeld(ctx context.Context, k Key) error {
	_, err := roundTrip(r, ctx, func(ctx context.Context) (int64, error) {
		return r.heldAdd.Run(ctx, r.client, r.heldKeys(), k.ID(), k.Tenant, k.Operation, MaxHeldEntries).Int64()
	})
	if err != nil {
		return fmt.Errorf("ledger: redis held index: %w", err)
	}
	return nil
}

// heldVersion returns k's entry version, "" when it has none.
func (r *Redis) heldVersion(ctx context.Context, k Key) (string, error) {
	v, err := roundTrip(r, ctx, func(ctx context.Context) (string, error) {
		return r.client.HGet(ctx, r.heldKeys()[1], k.ID()).Result()
	})
	switch {
	case errors.Is(err, redis.Nil):
		return "", nil
	case err != nil:
		return "", err
	}
	var m struct {
		V int64 `json:"v"`
	}
	if err := json.Unmarshal([]byte(v), &m); err != nil {
		return "", fmt.Errorf("%w: held index version %q", ErrCorrupt, v)
	}
	return strconv.FormatInt(m.V, 10), nil
}

// unindexHeld removes the entries named (Key.ID to the version read
// before their records were found settled), best effort: one left is
// dropped when next listed.
func (r *Redis) unindexHeld(ctx context.Context, stale map[string]string) {
	if len(stale) == 0 {
		return
	}
	args := make([]any, 0, 2*len(stale))
	for id, v := range stale {
		args = append(args, id, v)
	}
	_, _ = roundTrip(r, ctx, func(ctx context.Context) (int64, error) {
		return r.heldPrune.Run(ctx, r.client, r.heldKeys(), args...).Int64()
	})
}

// Held implements HeldLister from the store's held index: an entry per
// action made uncertain (by Fail, entered before the record changes, in
// a slot of its own, so the success path writes nothing to it), ordered
// by when it was first entered. Each entry on a page is checked against
// its record, read in one pipeline with the server's TIME: an action
// settled or gone is left off and its entry removed; one in progress
// under a live lease (a reconciler at work) is left off and its entry
// kept. A page costs two round trips, plus one per removal and per round
// that refills what stale entries left empty (at most four rounds).
//
// An action in progress whose lease ran out without Fail (its owner
// died) has no entry unless it was uncertain before: StuckInProgress
// finds those, by a bounded scan.
func (r *Redis) Held(ctx context.Context, q HeldQuery) (HeldPage, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultHeldLimit
	}
	limit = min(limit, MaxHeldLimit)
	examine := q.Examine
	if examine <= 0 {
		examine = DefaultHeldExamine
	}
	score, member := "-inf", ""
	if q.After != "" {
		var ok bool
		if score, member, ok = strings.Cut(q.After, ":"); !ok {
			return HeldPage{}, fmt.Errorf("%w: HeldQuery.After %q is not a cursor Held returned", ErrInvalid, q.After)
		}
		if _, err := strconv.ParseFloat(score, 64); err != nil {
			return HeldPage{}, fmt.Errorf("%w: HeldQuery.After %q is not a cursor Held returned", ErrInvalid, q.After)
		}
	}
	var (
		page    HeldPage
		skipped []error
	)
	for round := 0; round < heldRounds; round++ {
		ix, err := r.heldPage(ctx, score, member, q.Tenant, q.Operation, limit-len(page.Records), examine)
		if err != nil {
			return HeldPage{}, err
		}
		if round == 0 {
			page.Entries, page.Groups, page.Capped = ix.entries, ix.groups, ix.capped
		}
		recs, stale, bad, err := r.heldRecords(ctx, ix.ids)
		if err != nil {
			return HeldPage{}, err
		}
		page.Records = append(page.Records, recs...)
		skipped = append(skipped, bad...)
		r.unindexHeld(ctx, stale)
		score, member = ix.nextScore, ix.nextMember
		if !ix.more {
			return page, corrupt(skipped)
		}
		if len(page.Records) >= limit || len(stale) == 0 {
			break
		}
	}
	page.Next = score + ":" + member
	return page, corrupt(skipped)
}

// heldIndexPage is what heldpage.lua returned.
type heldIndexPage struct {
	entries               int
	capped, more          bool
	nextScore, nextMember string
	groups                []HeldGroup
	ids                   []heldEntry
}

// heldEntry is one index entry on a page.
type heldEntry struct{ id, version string }

func (r *Redis) heldPage(ctx context.Context, score, member, tenant, operation string, want, examine int) (heldIndexPage, error) {
	reply, err := roundTrip(r, ctx, func(ctx context.Context) ([]any, error) {
		return r.heldRead.Run(ctx, r.client, r.heldKeys(), score, member, tenant, operation, want, examine).Slice()
	})
	if err != nil {
		return heldIndexPage{}, fmt.Errorf("ledger: redis held index: %w", err)
	}
	bad := fmt.Errorf("%w: held index reply of %d elements", ErrCorrupt, len(reply))
	if len(reply) < 6 {
		return heldIndexPage{}, bad
	}
	var p heldIndexPage
	entries, _ := reply[0].(int64)
	groups, _ := reply[5].(int64)
	p.entries = int(entries)
	p.capped, p.more = reply[1] == "1", reply[2] == "1"
	p.nextScore, _ = reply[3].(string)
	p.nextMember, _ = reply[4].(string)
	rest := reply[6:]
	if groups < 0 || len(rest) < 3*int(groups) || (len(rest)-3*int(groups))%3 != 0 {
		return heldIndexPage{}, bad
	}
	for i := 0; i < 3*int(groups); i += 3 {
		t, _ := rest[i].(string)
		o, _ := rest[i+1].(string)
		n, _ := rest[i+2].(int64)
		p.groups = append(p.groups, HeldGroup{Tenant: t, Operation: o, Held: int(n)})
	}
	for i := 3 * int(groups); i < len(rest); i += 3 {
		id, _ := rest[i].(string)
		v, _ := rest[i+2].(string)
		p.ids = append(p.ids, heldEntry{id: id, version: v})
	}
	return p, nil
}

// heldRecords reads the records of entries in one pipeline with the
// server's TIME and sorts them: held ones listed, in order; settled or
// gone ones returned as stale (Key.ID to the entry's version); records
// that cannot be decoded skipped with their error.
func (r *Redis) heldRecords(ctx context.Context, entries []heldEntry) (held []Record, stale map[string]string, skipped []error, err error) {
	if len(entries) == 0 {
		return nil, nil, nil, nil
	}
	var tm *redis.TimeCmd
	reads := make([]*redis.MapStringStringCmd, len(entries))
	_, err = roundTrip(r, ctx, func(ctx context.Context) ([]redis.Cmder, error) {
		return r.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			tm = p.Time(ctx)
			for i, e := range entries {
				reads[i] = p.HGetAll(ctx, r.prefix+"{"+e.id+"}")
			}
			return nil
		})
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("ledger: redis held records: %w", err)
	}
	now := time.UnixMilli(tm.Val().UnixMilli())
	stale = map[string]string{}
	for i, cmd := range reads {
		fields := cmd.Val()
		if len(fields) == 0 {
			stale[entries[i].id] = entries[i].version // gone
			continue
		}
		rec, err := decodeRecord(fields, r.cfg.EncryptionKeys)
		switch {
		case err != nil:
			skipped = append(skipped, fmt.Errorf("entry %s: %w", entries[i].id[:12], err))
		case now.After(rec.ExpiresAt), rec.State == StateCompleted, rec.State == StateFailed:
			stale[entries[i].id] = entries[i].version
		case rec.stuck(now):
			held = append(held, rec)
		}
	}
	return held, stale, skipped, nil
}

// StuckInProgress scans at most maxKeys keys of each node (zero means
// DefaultHeldExamine) for actions in progress whose lease ran out, the
// held actions without an entry in the held index (their owner died
// without Fail), and returns them oldest lease first. complete reports
// that the scan covered every key. Its cost grows with maxKeys, not with
// the keyspace: each batch of keys costs one pipeline reading three
// fields of each record and the node's TIME, and whole records are read
// only for the stuck ones.
func (r *Redis) StuckInProgress(ctx context.Context, maxKeys int) (stuck []Record, complete bool, err error) {
	if maxKeys <= 0 {
		maxKeys = DefaultHeldExamine
	}
	var (
		mu      sync.Mutex // guards stuck, skipped and complete; ForEachMaster calls scan concurrently
		skipped []error
	)
	complete = true
	pattern := globEscape(r.prefix) + "{*}"
	scan := func(ctx context.Context, c redis.Cmdable) error {
		var cursor uint64
		for seen := 0; ; {
			keys, next, err := c.Scan(ctx, cursor, pattern, sweepBatch).Result()
			if err != nil {
				return err
			}
			seen += len(keys)
			recs, bad, err := r.stuckLeases(ctx, c, keys)
			if err != nil {
				return err
			}
			mu.Lock()
			stuck = append(stuck, recs...)
			skipped = append(skipped, bad...)
			if next != 0 && seen >= maxKeys {
				complete = false
			}
			mu.Unlock()
			if next == 0 || seen >= maxKeys {
				return nil
			}
			cursor = next
		}
	}
	switch c := r.client.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return scan(ctx, n) })
	case *redis.Ring:
		err = c.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error { return scan(ctx, n) })
	default:
		err = scan(ctx, r.client)
	}
	if err != nil {
		return nil, false, fmt.Errorf("ledger: redis stuck scan: %w", err)
	}
	sortRecords(stuck)
	return stuck, complete, corrupt(skipped)
}

// stuckLeases returns the records among keys, on one node, that are in
// progress past their lease by that node's clock: a pipeline of the
// state, lease and expiry of each, then one of the whole stuck records.
func (r *Redis) stuckLeases(ctx context.Context, c redis.Cmdable, keys []string) (stuck []Record, skipped []error, err error) {
	if len(keys) == 0 {
		return nil, nil, nil
	}
	var tm *redis.TimeCmd
	heads := make([]*redis.SliceCmd, len(keys))
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		tm = p.Time(ctx)
		for i, k := range keys {
			heads[i] = p.HMGet(ctx, k, "st", "lu", "ea")
		}
		return nil
	}); err != nil {
		return nil, nil, err
	}
	now := tm.Val().UnixMilli()
	var candidates []string
	for i, h := range heads {
		v := h.Val()
		if len(v) != 3 || v[0] != StateInProgress.String() {
			continue
		}
		lu, _ := v[1].(string)
		ea, _ := v[2].(string)
		l, err1 := strconv.ParseInt(lu, 10, 64)
		e, err2 := strconv.ParseInt(ea, 10, 64)
		if err1 != nil || err2 != nil || (now >= l && now <= e) {
			candidates = append(candidates, keys[i]) // stuck, or unreadable: let decodeRecord judge
		}
	}
	if len(candidates) == 0 {
		return nil, nil, nil
	}
	recs, bad, err := r.stuckIn(ctx, c, candidates)
	for _, rec := range recs {
		if rec.State == StateInProgress {
			stuck = append(stuck, rec)
		}
	}
	return stuck, bad, err
}

// corrupt joins the decoding errors of skipped records into one wrapping
// ErrCorrupt, or returns nil.
func corrupt(skipped []error) error {
	if len(skipped) == 0 {
		return nil
	}
	return fmt.Errorf("ledger: redis held: skipped %d records that cannot be decoded: %w", len(skipped), errors.Join(skipped...))
}
