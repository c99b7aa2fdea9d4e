package ledger

import (
	"cmp"
	"context"
	_ "embed" // the Lua scripts
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/retrybudget/retrybudget/internal/redisstore"
)

// DefaultPrefix starts every Redis key a Redis store writes when
// RedisConfig.Prefix is zero.
const DefaultPrefix = "retrybudget:ledger:"

// The scripts, one per state change. The embed directives make a
// missing file a build error rather than a run-time one.
var (
	//go:embed lua/reserve.lua
	reserveLua string
	//go:embed lua/renew.lua
	renewLua string
	//go:embed lua/attempt.lua
	attemptLua string
	//go:embed lua/complete.lua
	completeLua string
	//go:embed lua/fail.lua
	failLua string
	//go:embed lua/mark.lua
	markLua string
	//go:embed lua/tenant.lua
	tenantLua string
	//go:embed lua/tenantkeep.lua
	tenantKeepLua string
)

// RedisConfig configures a Redis store. It requires Config.FingerprintKeys,
// a per-deployment secret held by every process of the fleet: NewRedis fails
// with ErrNoFingerprintKey without it, so the zero value is not ready to use.
// Every other zero field means the default its comment names.
type RedisConfig struct {
	Config
	// WaitReplicas, when positive, makes Reserve (when it grants the
	// action), MarkSending and Complete wait until that many replicas acknowledge the
	// write (Redis WAIT, on the connection that wrote), and fail with
	// ErrNotReplicated when they do not within WaitTimeout. A reservation
	// that was not acknowledged is given up at once rather than left in
	// progress: a grant to send for the first time or after a failure
	// without effect (VerdictCreated, VerdictRetry) as failed (no effect),
	// so the action runs again later; a takeover of an action that may
	// have been sent (VerdictReconcile, VerdictResend) as uncertain, so
	// Sweep lists it and the next caller asks the Reconciler. It narrows
	// what a failover can lose to writes no replica had; it does not make
	// Redis strongly consistent (see docs/ledger.md). It needs a client with
	// one primary (*redis.Client, including a Sentinel failover client).
	// Zero means no waiting.
	WaitReplicas int
	// WaitTimeout bounds WAIT. Zero means one second.
	WaitTimeout time.Duration
	// AllowEviction, when true, skips the check NewRedis makes that Redis
	// evicts no keys (maxmemory-policy noeviction). Every record carries a
	// TTL, its retention, so under any other policy a Redis short of
	// memory may drop records, completed ones included, and an action
	// whose record was dropped runs again: a second charge. Set it only
	// knowingly: when CONFIG GET is refused (as on many managed services)
	// and the policy is noeviction by other means, or when losing records
	// is acceptable. Zero means check, and refuse with ErrEviction.
	AllowEviction bool
	// TenantMaxRecords caps the records one tenant (Key.Tenant) holds, as
	// MemoryConfig.TenantMaxRecords does, so one caller cannot fill Redis
	// for all: a Reserve that would add a record beyond it fails with
	// ErrTenantFull, writing and sending nothing; replays and takeovers of
	// records the tenant holds still go. Each tenant has an index (a sorted
	// set named after a hash of the tenant, in its own cluster slot) that
	// Reserve checks first: one more round trip per Reserve, two when it
	// refuses, and one more per Renew, which keeps the count as long as
	// the lease keeps the record. A record counts from its first Reserve
	// until it is gone at the latest (retention, leases and ExpiryGrace,
	// and a minute for the Reserve's round trip after its admission),
	// also when that Reserve wrote nothing (VerdictDelayed), and each later
	// Reserve of it counts it for a whole life again: the count errs
	// towards refusing the tenant. Zero or negative means no quota.
	TenantMaxRecords int
	// Prefix starts every key the store writes. Zero means DefaultPrefix.
	// Stores sharing one Redis for different purposes need different
	// prefixes; Sweep scans for keys under its own. It must not contain
	// '{' or '}', which would move the cluster hash tag (NewRedis refuses
	// it).
	Prefix string
	// MaxBatch caps the script runs of concurrent actions that share one
	// round trip (a pipeline; see docs/ledger.md): a call made while none
	// is in flight goes at once, alone, and the calls made meanwhile go
	// together right after it. Zero means DefaultMaxBatch; 1 turns sharing
	// off, every call its own round trip. With WaitReplicas calls are
	// never shared.
	MaxBatch int
}

// Redis is the Store for a fleet: records live in Redis, so every process
// sharing it sees one ledger. It works with a single server, a failover
// client, a cluster or a ring.
//
// Each action is one hash named <prefix>{<Key.ID>}: the braces are a
// cluster hash tag covering the whole name, so each record sits in one
// slot, and the name holds only a hash, never the raw key. Each state
// change is one Lua script touching that one key, reading the server's
// TIME, so the decision is atomic and the fleet shares one clock. Records
// expire with PEXPIREAT at their retention, extended to cover a live lease.
//
// Reserve and Complete cost one round trip each (EVALSHA; the first call
// on a fresh server adds an EVAL), the sending mark and the last send's
// history entry included when the caller folds them in
// (ReserveRequest.Sending, Outcome.AttemptClass), and shared with the calls
// of other actions made at the same time (see RedisConfig.MaxBatch). Sweep
// scans keys (see Sweep).
//
// It needs Redis 5 or later: the scripts read TIME before writing, which
// needs effects replication, the default since Redis 5.
type Redis struct {
	client    redis.UniversalClient
	cfg       Config
	prefix    string
	wait      int           // RedisConfig.WaitReplicas
	tenantMax int           // RedisConfig.TenantMaxRecords; <= 0: no quota
	waitTO    time.Duration // RedisConfig.WaitTimeout, defaulted
	// detached runs each call's round trips in a goroutine, since the
	// client would hold a command past its context's deadline (see
	// roundTrip).
	detached bool

	// scripts is what the scripts run through: the client, or a
	// batchScripter sharing round trips between concurrent calls.
	scripts redis.Scripter

	// One script per state change, each owned by the store, not by the
	// package, so no mutable state is global.
	reserve, renew, attempt, complete, fail, mark, tenant, tenantKeep *redis.Script
	// settle writes an operator's settlement (Settle); heldAdd, heldRead
	// and heldPrune keep the held index (Held).
	settle, heldAdd, heldRead, heldPrune *redis.Script
}

// NewRedis returns a Redis store using client. The store does not close
// client. It fails with an error wrapping ErrInvalidConfig for a nil client (or
// a nil *redis.Client, *redis.ClusterClient or *redis.Ring), for a
// Prefix holding '{' or '}', and for missing or short
// Config.FingerprintKeys (ErrNoFingerprintKey, which wraps
// ErrInvalidConfig too). Unless RedisConfig.AllowEviction is set, it then
// reads maxmemory-policy from every primary (one round trip each, bounded
// by five seconds) and fails with ErrEviction, which wraps
// ErrInvalidConfig too, when one is not noeviction or refuses CONFIG GET,
// and with the client's error when Redis does not answer.
func NewRedis(client redis.UniversalClient, cfg RedisConfig) (*Redis, error) {
	prefix, err := redisstore.Setup(client, cfg.Prefix, DefaultPrefix)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if _, one := client.(*redis.Client); cfg.WaitReplicas > 0 && !one {
		return nil, fmt.Errorf("%w: RedisConfig.WaitReplicas needs a client with one primary (a *redis.Client, such as redis.NewFailoverClient), not %T: use one, or set WaitReplicas to 0", ErrInvalidConfig, client)
	}
	// Records in Redis are readable by whoever can read Redis: keep no
	// fingerprint there that could be reversed by guessing.
	if err := cfg.FingerprintKeys.Validate(); err != nil {
		return nil, fmt.Errorf("NewRedis: %w", err)
	}
	if err := cfg.EncryptionKeys.Validate(); err != nil {
		return nil, fmt.Errorf("NewRedis: %w", err)
	}
	if !cfg.AllowEviction {
		if err := checkNoEviction(client); err != nil {
			return nil, err
		}
	}
	return &Redis{
		client:     client,
		cfg:        cfg.Config,
		wait:       cfg.WaitReplicas,
		waitTO:     cmp.Or(cfg.WaitTimeout, time.Second),
		detached:   !redisstore.HonoursContext(client),
		scripts:    newScripter(client, cfg.MaxBatch, cfg.WaitReplicas),
		prefix:     prefix,
		reserve:    redis.NewScript(reserveLua),
		renew:      redis.NewScript(renewLua),
		attempt:    redis.NewScript(attemptLua),
		complete:   redis.NewScript(completeLua),
		fail:       redis.NewScript(failLua),
		mark:       redis.NewScript(markLua),
		tenant:     redis.NewScript(tenantLua),
		tenantKeep: redis.NewScript(tenantKeepLua),
		tenantMax:  cfg.TenantMaxRecords,
		settle:     redis.NewScript(settleLua),
		heldAdd:    redis.NewScript(heldAddLua),
		heldRead:   redis.NewScript(heldPageLua),
		heldPrune:  redis.NewScript(heldPruneLua),
	}, nil
}

// keyName returns the Redis key of k's record.
func (r *Redis) keyName(k Key) string { return r.prefix + "{" + k.ID() + "}" }

// Reserve implements Store with one script run.
func (r *Redis) Reserve(ctx context.Context, req ReserveRequest) (Reservation, error) {
	if err := req.Key.validate(); err != nil {
		return Reservation{}, err
	}
	lease, retention, err := r.cfg.durations(req.Lease, req.Retention)
	if err != nil {
		return Reservation{}, err
	}
	settle, err := SettleTime(req.Settle, lease)
	if err != nil {
		return Reservation{}, err
	}
	// The Redis client re-sends a script whose reply timed out, and the
	// first run may have happened: the nonce lets the re-sent run find
	// the grant the first one made.
	nonce := req.Nonce
	if nonce == "" {
		nonce = NewNonce()
	}
	if r.tenantMax > 0 {
		if err := r.admitTenant(ctx, req.Key, lease, retention); err != nil {
			return Reservation{}, err
		}
	}
	fp := r.cfg.FingerprintKeys.sealing(req.Fingerprint)
	args := []any{
		fp.stored, req.Owner, lease.Milliseconds(), retention.Milliseconds(),
		flag(req.Limited), flag(req.Reconciler), flag(req.KeysHonoured),
		req.Key.Tenant, req.Key.Operation, req.Key.Key, newToken(), r.cfg.HistoryCap(),
		nonce, flag(req.MarksSending), req.Instance, settle.Milliseconds(), flag(req.ReplacesFailed),
		flag(req.Sending),
	}
	for _, c := range fp.candidates {
		args = append(args, c)
	}
	reply, err := roundTrip(r, ctx, func(ctx context.Context) ([]string, error) {
		var reply []string
		err := r.replicated(ctx, func(c redis.Scripter) (bool, error) {
			var err error
			reply, err = r.reserve.Run(ctx, c, []string{r.keyName(req.Key)}, args...).StringSlice()
			return err == nil && len(reply) >= 5 && reply[4] != "0", err // a token: it wrote a grant
		})
		if errors.Is(err, ErrNotReplicated) && len(reply) >= 5 {
			r.abandon(ctx, req.Key, reply[0], reply[4])
		}
		return reply, err
	})
	if err != nil {
		return Reservation{}, fmt.Errorf("ledger: redis reserve: %w", err)
	}
	const head = 9
	if len(reply) < head || (len(reply)-head)%2 != 0 {
		return Reservation{}, fmt.Errorf("%w: reserve reply of %d elements", ErrCorrupt, len(reply))
	}
	verdict, stored, expired := reply[0], reply[1], reply[2]
	now, err1 := strconv.ParseInt(reply[3], 10, 64)
	token, err2 := strconv.ParseInt(reply[4], 10, 64)
	if err1 != nil || err2 != nil {
		return Reservation{}, fmt.Errorf("%w: reserve reply %q", ErrCorrupt, reply[:head])
	}
	fields := pairs(reply[head:])

	in := Input{
		Fingerprint:    fp.stored,
		LeaseExpired:   expired == "1",
		Limited:        req.Limited,
		Reconciler:     req.Reconciler,
		KeysHonoured:   req.KeysHonoured,
		Regrant:        reply[5] == "1",
		Unsent:         reply[6] == "1",
		Reclaim:        reply[7] == "1",
		Settling:       reply[8] == "1",
		ReplacesFailed: req.ReplacesFailed,
	}
	if in.Regrant {
		in.Granted, _ = ParseVerdict(fields["gv"])
	}
	if stored != StateAbsent.String() {
		if in.State, err = ParseState(stored); err != nil {
			return Reservation{}, fmt.Errorf("%w: stored state %q", ErrCorrupt, stored)
		}
		// Only a new record, or a takeover of a failed one, changes the
		// fingerprint, and then the stored one did not matter.
		in.StoredFingerprint = fields["fp"]
		in.Fingerprint = matchSealed(fields["fp"], fp)
	}
	res := Reservation{Decision: Resolve(in), Token: token, SettlesAttempt: true}
	// reserve.lua writes the mark with every grant that sends when asked;
	// a regrant is the same request, whose first run wrote it.
	res.Sending = req.Sending && res.Send && token != 0
	if res.Verdict.String() != verdict {
		return Reservation{}, fmt.Errorf("%w: script verdict %q, Resolve %q", ErrCorrupt, verdict, res.Verdict)
	}
	res.Expired = in.State == StateExpired && res.Verdict == VerdictCreated
	if res.Verdict == VerdictCreated && token != 0 && !in.Regrant {
		res.Record = newRecord(req, fp.stored, token, now, lease, retention, settle)
		return res, nil
	}
	if len(fields) == 0 || (in.State == StateExpired && token == 0) {
		res.Record = Record{Key: req.Key}
		return res, nil
	}
	if res.Record, err = decodeRecord(fields, r.cfg.EncryptionKeys); err != nil {
		return Reservation{}, err
	}
	switch {
	case res.Verdict == VerdictPending:
		res.RetryAfter = res.Record.LeaseUntil.Sub(time.UnixMilli(now))
	case res.Settling:
		res.RetryAfter = res.Record.SettleUntil.Sub(time.UnixMilli(now))
	}
	return res, nil
}

// newRecord is the record reserve.lua writes for a new action (every
// field of its w, from ARGV and the server's now in ms), built here
// rather than sent back: the script answers a new record with the head of
// its reply alone.
func newRecord(req ReserveRequest, fingerprint string, token, now int64, lease, retention, settle time.Duration) Record {
	lu := now + lease.Milliseconds()
	rec := Record{
		Key:         req.Key,
		Fingerprint: fingerprint,
		State:       StateInProgress,
		Owner:       req.Owner,
		Instance:    req.Instance,
		LeaseUntil:  time.UnixMilli(lu),
		Sending:     req.Sending,
		Attempts:    []Attempt{{N: 1, At: time.UnixMilli(now), Class: VerdictCreated.String(), Owner: req.Owner, Token: token}},
		CreatedAt:   time.UnixMilli(now),
		ExpiresAt:   time.UnixMilli(max(now+retention.Milliseconds(), lu+lease.Milliseconds())),
	}
	if req.Sending {
		rec.SettleUntil = time.UnixMilli(now + settle.Milliseconds())
	}
	return rec
}

// Renew implements Store.
func (r *Redis) Renew(ctx context.Context, k Key, token int64, lease time.Duration) error {
	lease, _, err := r.cfg.durations(lease, 0)
	if err != nil {
		return err
	}
	if err := r.fenced(ctx, r.renew, "renew", k, token, lease.Milliseconds()); err != nil {
		return err
	}
	if r.tenantMax > 0 {
		return r.keepTenantCount(ctx, k, lease)
	}
	return nil
}

// AddAttempt implements Store.
func (r *Redis) AddAttempt(ctx context.Context, k Key, token int64, class string) (Attempt, error) {
	nonce := NewNonce() // a run the client sends again finds its own entry
	reply, err := roundTrip(r, ctx, func(ctx context.Context) (any, error) {
		return r.attempt.Run(ctx, r.scripts, []string{r.keyName(k)}, token, class, r.cfg.HistoryCap(), nonce).Result()
	})
	if err != nil {
		return Attempt{}, fmt.Errorf("ledger: redis add attempt: %w", err)
	}
	v, ok := reply.([]any)
	if !ok {
		return Attempt{}, notOwner(k)
	}
	if len(v) != 3 {
		return Attempt{}, fmt.Errorf("%w: attempt reply %v", ErrCorrupt, v)
	}
	n, _ := v[0].(int64)
	ms, _ := v[1].(string)
	owner, _ := v[2].(string)
	at, err := strconv.ParseInt(ms, 10, 64)
	if err != nil || n < 1 {
		return Attempt{}, fmt.Errorf("%w: attempt reply %v", ErrCorrupt, v)
	}
	return Attempt{N: int(n), At: time.UnixMilli(at), Class: class, Owner: owner, Token: token}, nil
}

// Complete implements Store.
func (r *Redis) Complete(ctx context.Context, k Key, token int64, o Outcome) error {
	args, err := r.sealedOutcome(k, o)
	if err != nil {
		return err
	}
	args = append(args, o.AttemptClass, r.cfg.HistoryCap(), NewNonce())
	_, err = roundTrip(r, ctx, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, r.replicated(ctx, func(c redis.Scripter) (bool, error) {
			err := r.fencedOn(ctx, c, r.complete, "complete", k, token, args...)
			return err == nil, err
		})
	})
	return err
}

// sealedOutcome returns o as complete.lua and settle.lua store it: status,
// headers (JSON, sealed), body (sealed), body hash, length, omitted and
// encrypted flags.
func (r *Redis) sealedOutcome(k Key, o Outcome) ([]any, error) {
	s := r.cfg.storedOutcome(o)
	h, err := json.Marshal(s.Header)
	if err != nil {
		return nil, fmt.Errorf("ledger: encode headers: %w", err)
	}
	if h, err = r.cfg.EncryptionKeys.Seal(k, "headers", h); err != nil {
		return nil, err
	}
	body := s.Body
	if len(body) > 0 {
		if body, err = r.cfg.EncryptionKeys.Seal(k, "body", body); err != nil {
			return nil, err
		}
	}
	return []any{s.Status, h, body, s.BodyHash, s.BodyLen, flag(s.BodyOmitted), flag(len(r.cfg.EncryptionKeys) > 0)}, nil
}

// Fail implements Store. An action it makes uncertain is first entered
// in the held index (Held): one more round trip, on that rare path only.
func (r *Redis) Fail(ctx context.Context, k Key, token int64, f Failure) error {
	st := StateFailed
	if f.EffectPossible {
		st = StateUncertain
		if err := r.indexHeld(ctx, k); err != nil {
			return err
		}
	}
	return r.fenced(ctx, r.fail, "fail", k, token, st.String(), f.Reason, f.AttemptClass, r.cfg.HistoryCap(), NewNonce())
}

// MarkSending implements Store. With RedisConfig.WaitReplicas it waits for
// the replicas like Reserve and Complete, and fails with ErrNotReplicated
// when they do not acknowledge the mark: a failover would then promote a
// replica holding the grant without the mark, where the action reads as
// never sent and is taken over to be sent again, so the caller must not
// send.
func (r *Redis) MarkSending(ctx context.Context, k Key, token int64) error {
	_, err := roundTrip(r, ctx, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, r.replicated(ctx, func(c redis.Scripter) (bool, error) {
			err := r.fencedOn(ctx, c, r.mark, "mark sending", k, token)
			return err == nil, err
		})
	})
	return err
}

// Get implements Store.
func (r *Redis) Get(ctx context.Context, k Key) (Record, error) {
	var all *redis.MapStringStringCmd
	var tm *redis.TimeCmd
	_, err := roundTrip(r, ctx, func(ctx context.Context) ([]redis.Cmder, error) {
		return r.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			all, tm = p.HGetAll(ctx, r.keyName(k)), p.Time(ctx)
			return nil
		})
	})
	if err != nil {
		return Record{}, fmt.Errorf("ledger: redis get: %w", err)
	}
	fields := all.Val()
	if len(fields) == 0 {
		return Record{}, ErrNotFound
	}
	rec, err := decodeRecord(fields, r.cfg.EncryptionKeys)
	// Past its retention, a record is kept only for Reserve to report the
	// expiry (ExpiryGrace): for everything else it is gone.
	if err == nil && time.UnixMilli(tm.Val().UnixMilli()).After(rec.ExpiresAt) {
		return Record{}, ErrNotFound
	}
	return rec, err
}

// fenced runs a script that returns 1 when token is current and 0 when
// it is not.
func (r *Redis) fenced(ctx context.Context, s *redis.Script, op string, k Key, token int64, args ...any) error {
	_, err := roundTrip(r, ctx, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, r.fencedOn(ctx, r.scripts, s, op, k, token, args...)
	})
	return err
}

// roundTrip runs op, the round trips of one store call, so that the call
// returns once ctx ends. A client that honours context deadlines ends op
// itself; otherwise (go-redis without ContextTimeoutEnabled holds a
// command on the wire for its ReadTimeout, and re-sends it) op runs in a
// goroutine that ends when the client gives up, its result dropped. The
// scripts are fenced and the nonce makes Reserve idempotent, so a late
// write changes nothing a caller relies on.
func roundTrip[T any](r *Redis, ctx context.Context, op func(context.Context) (T, error)) (T, error) {
	if !r.detached {
		return op(ctx)
	}
	return redisstore.Detach(ctx, op)
}

// fencedOn is fenced on the connection or client c.
func (r *Redis) fencedOn(ctx context.Context, c redis.Scripter, s *redis.Script, op string, k Key, token int64, args ...any) error {
	n, err := s.Run(ctx, c, []string{r.keyName(k)}, append([]any{token}, args...)...).Int()
	if err != nil {
		return fmt.Errorf("ledger: redis %s: %w", op, err)
	}
	if n != 1 {
		return notOwner(k)
	}
	return nil
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// pairs turns HGETALL's flat reply into a map.
func pairs(flat []string) map[string]string {
	m := make(map[string]string, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		m[flat[i]] = flat[i+1]
	}
	return m
}
