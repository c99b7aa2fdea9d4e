package ledger

import (
	"context"
	"crypto/rand"
	"sync"
	"time"
)

// MemoryConfig configures a Memory store. The zero value is ready to use.
type MemoryConfig struct {
	Config
	// Now reads the store's clock. Nil means time.Now. Tests and
	// simulations set it to a fake clock. The store calls it before taking
	// its lock, so Now may block or call back into the store.
	Now func() time.Time
	// MaxRecords caps the records the store holds; Reserve of a new
	// action in a full store fails with ErrFull. Zero means
	// DefaultMaxRecords (100,000); negative means no cap.
	MaxRecords int
	// MaxBytes caps the bytes of records the store holds, as it estimates
	// them (keys, fingerprint, headers, body, attempts and a fixed
	// overhead). It is checked when a record is created. Completing a
	// record in progress never fails for space: an outcome whose body
	// would take the store past MaxBytes, or its tenant past
	// TenantMaxBytes, is kept without it (Outcome.BodyOmitted, its hash and
	// length kept), as a body over Config.MaxBody is, so records admitted
	// small while in progress cannot grow past the caps together. Zero
	// means DefaultMaxBytes (64 MiB); negative means no cap.
	MaxBytes int64
	// TenantMaxRecords and TenantMaxBytes cap what one tenant (Key.Tenant)
	// holds, so one caller cannot fill the store for all; Reserve beyond
	// them fails with ErrTenantFull, and an outcome's body beyond
	// TenantMaxBytes is not kept (see MaxBytes). Zero or negative means no
	// quota.
	TenantMaxRecords int
	TenantMaxBytes   int64
}

// Memory is the in-process Store, the embedded default: records live in a
// map behind one mutex, so every operation is atomic. It forgets
// everything when the process exits, so it protects against duplicates
// within one process only.
//
// It runs no goroutines. Expired records are dropped when touched, by
// Sweep, and by Reserve, which examines up to two other records per call,
// the way Redis expires keys actively; memory therefore follows the live
// records. It is bounded (MemoryConfig.MaxRecords, MaxBytes and the
// tenant quotas): a full store refuses new actions with ErrFull rather
// than evict one, except records that are expired or failed, which it
// drops, at most one full scan a second, to make room.
type Memory struct {
	mu      sync.Mutex // guards entries and quota
	entries map[Key]*memoryEntry
	quota   quota

	cfg Config
	now func() time.Time
}

type memoryEntry struct {
	rec   Record
	token int64
	size  int64 // what the quota counts for rec
	// nonce, granted, promised and settle describe the current grant:
	// the request's Nonce, the Verdict it got, its MarksSending and its
	// settle time (ReserveRequest.Settle, defaulted).
	nonce    string
	granted  Verdict
	promised bool
	settle   time.Duration
}

// NewMemory returns an empty Memory store.
func NewMemory(cfg MemoryConfig) *Memory {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	if len(cfg.FingerprintKeys) == 0 {
		// Even in process memory a bare fingerprint is better not kept:
		// a heap dump or a debug endpoint would show it.
		key := make([]byte, 32)
		_, _ = rand.Read(key) // never fails (crypto/rand)
		cfg.FingerprintKeys = FingerprintKeys{key}
	}
	return &Memory{entries: map[Key]*memoryEntry{}, quota: newQuota(cfg), cfg: cfg.Config, now: now}
}

// Reserve implements Store.
func (m *Memory) Reserve(ctx context.Context, req ReserveRequest) (Reservation, error) {
	if err := ctx.Err(); err != nil {
		return Reservation{}, err
	}
	if err := req.Key.validate(); err != nil {
		return Reservation{}, err
	}
	lease, retention, err := m.cfg.durations(req.Lease, req.Retention)
	if err != nil {
		return Reservation{}, err
	}
	settle, err := SettleTime(req.Settle, lease)
	if err != nil {
		return Reservation{}, err
	}

	sealed := m.cfg.FingerprintKeys.Seal(req.Fingerprint)
	now := m.now() // before the lock: no callbacks while it is held
	m.mu.Lock()
	defer m.mu.Unlock()
	m.evictSome(now)
	// A record past its retention is replaced: dropped here, and reported
	// as the expiry event if this Reserve creates the new one.
	old, had := m.entries[req.Key]
	expired := had && now.After(old.rec.ExpiresAt)
	if expired {
		m.drop(req.Key, old)
	}
	e := m.live(req.Key, now)

	in := Input{
		Fingerprint:    sealed,
		Limited:        req.Limited,
		Reconciler:     req.Reconciler,
		KeysHonoured:   req.KeysHonoured,
		ReplacesFailed: req.ReplacesFailed,
	}
	if e != nil {
		in.State = e.rec.State
		in.Fingerprint = m.cfg.FingerprintKeys.Match(e.rec.Fingerprint, req.Fingerprint)
		in.StoredFingerprint = e.rec.Fingerprint
		in.LeaseExpired = e.rec.State == StateInProgress && !now.Before(e.rec.LeaseUntil)
		in.Regrant = req.Nonce != "" && e.nonce == req.Nonce
		in.Granted = e.granted
		in.Unsent = e.promised && !e.rec.Sending
		in.Reclaim = req.reclaims(&e.rec)
		in.Settling = now.Before(e.rec.SettleUntil)
	}
	if expired {
		in.State = StateExpired
	}
	res := Reservation{Decision: Resolve(in)}
	res.Expired = expired && res.Verdict == VerdictCreated
	if in.Regrant && e.rec.State == StateInProgress && res.Verdict == e.granted {
		res.Token, res.Record = e.token, e.rec.clone()
		res.Sending, res.SettlesAttempt = req.Sending && res.Send, true
		if res.Settling {
			res.RetryAfter = e.rec.SettleUntil.Sub(now)
		}
		return res, nil
	}

	if res.Verdict == VerdictCreated {
		if err := m.admit(req, sealed, now); err != nil {
			return Reservation{}, err
		}
		e = &memoryEntry{
			token: newToken() - 1, // the grant below adds one
			rec: Record{
				Key:         req.Key,
				Fingerprint: in.Fingerprint,
				CreatedAt:   now,
				ExpiresAt:   now.Add(retention),
			},
		}
		m.entries[req.Key] = e
		m.quota.add(req.Key.Tenant, 1, 0)
	}
	if res.Verdict.Owns() {
		if e.rec.State == StateFailed && req.ReplacesFailed {
			// A failed record takes the fingerprint of the request that
			// takes it over (see Resolve).
			e.rec.Fingerprint = sealed
		}
		e.nonce, e.granted, e.promised, e.settle = req.Nonce, res.Verdict, req.MarksSending, settle
		e.token++
		e.rec.State = StateInProgress
		e.rec.Owner, e.rec.Instance = req.Owner, req.Instance
		e.rec.Reason = ""
		e.rec.LeaseUntil = now.Add(lease)
		// Kept a lease past the lease's end, so that a worker that died
		// holding it is still seen as stuck, not as absent.
		e.rec.ExpiresAt = later(e.rec.ExpiresAt, e.rec.LeaseUntil.Add(lease))
		e.rec.Attempts = appendAttempt(e.rec.Attempts, m.cfg.HistoryCap(), Attempt{
			At: now, Class: res.Verdict.String(), Owner: req.Owner, Token: e.token,
		})
		if req.Sending && res.Send {
			// The grant carries the mark (ReserveRequest.Sending).
			e.rec.Sending, e.rec.SettleUntil, res.Sending = true, now.Add(settle), true
		}
		res.Token = e.token
		m.track(e)
	}
	res.SettlesAttempt = true
	switch {
	case res.Verdict == VerdictPending:
		res.RetryAfter = e.rec.LeaseUntil.Sub(now)
	case res.Settling:
		res.RetryAfter = e.rec.SettleUntil.Sub(now)
	}
	if e != nil {
		res.Record = e.rec.clone()
	} else {
		res.Record = Record{Key: req.Key}
	}
	return res, nil
}

// Renew implements Store.
func (m *Memory) Renew(ctx context.Context, k Key, token int64, lease time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	lease, _, err := m.cfg.durations(lease, 0)
	if err != nil {
		return err
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.owned(k, token, now)
	if err != nil {
		return err
	}
	e.rec.LeaseUntil = now.Add(lease)
	e.rec.ExpiresAt = later(e.rec.ExpiresAt, e.rec.LeaseUntil.Add(lease))
	return nil
}

// AddAttempt implements Store.
func (m *Memory) AddAttempt(ctx context.Context, k Key, token int64, class string) (Attempt, error) {
	if err := ctx.Err(); err != nil {
		return Attempt{}, err
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.owned(k, token, now)
	if err != nil {
		return Attempt{}, err
	}
	m.addAttempt(e, class, now)
	m.track(e)
	return e.rec.Attempts[len(e.rec.Attempts)-1], nil
}

// addAttempt appends a send of class to e's history at now and starts its
// settle time, for AddAttempt and the send Complete and Fail carry.
// addAttempt requires that m.mu is held.
func (m *Memory) addAttempt(e *memoryEntry, class string, now time.Time) {
	e.rec.Attempts = appendAttempt(e.rec.Attempts, m.cfg.HistoryCap(), Attempt{At: now, Class: class, Owner: e.rec.Owner, Token: e.token})
	e.rec.SettleUntil = now.Add(e.settle)
}

// Complete implements Store.
func (m *Memory) Complete(ctx context.Context, k Key, token int64, o Outcome) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	stored := m.cfg.storedOutcome(o) // outside the lock: it hashes the body
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.owned(k, token, now)
	if err != nil {
		return err
	}
	if o.AttemptClass != "" {
		m.addAttempt(e, o.AttemptClass, now)
	}
	e.rec.State = StateCompleted
	e.rec.LeaseUntil = time.Time{}
	e.rec.Outcome = stored
	if len(stored.Body) > 0 && m.quota.exceeds(k.Tenant, recordSize(&e.rec)-e.size) {
		// Admitted small while in progress, the record would take its
		// tenant or the store past the bytes cap with this body.
		stored.Body, stored.BodyOmitted = nil, true
	}
	m.track(e)
	return nil
}

// Fail implements Store.
func (m *Memory) Fail(ctx context.Context, k Key, token int64, f Failure) error {
	now := m.now()
	return m.change(ctx, k, token, func(e *memoryEntry) {
		if f.AttemptClass != "" {
			m.addAttempt(e, f.AttemptClass, now)
		}
		e.rec.State = StateFailed
		if f.EffectPossible {
			e.rec.State = StateUncertain
		}
		e.rec.LeaseUntil = time.Time{}
		e.rec.Reason = f.Reason
	})
}

// MarkSending implements Store.
func (m *Memory) MarkSending(ctx context.Context, k Key, token int64) error {
	now := m.now()
	return m.change(ctx, k, token, func(e *memoryEntry) {
		e.rec.Sending = true
		e.rec.SettleUntil = now.Add(e.settle)
	})
}

// change applies fn to k's entry under the lock if token is current.
func (m *Memory) change(ctx context.Context, k Key, token int64, fn func(*memoryEntry)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.owned(k, token, now)
	if err != nil {
		return err
	}
	fn(e)
	m.track(e)
	return nil
}

// Get implements Store.
func (m *Memory) Get(ctx context.Context, k Key) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, err
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.live(k, now)
	if e == nil {
		return Record{}, ErrNotFound
	}
	return e.rec.clone(), nil
}

// Sweep implements Store. It also drops every expired record.
func (m *Memory) Sweep(ctx context.Context, limit int) ([]Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := m.now()
	m.mu.Lock()
	var out []Record
	for k, e := range m.entries {
		if now.After(e.rec.ExpiresAt.Add(ExpiryGrace)) {
			m.drop(k, e)
			continue
		}
		if now.After(e.rec.ExpiresAt) {
			continue // kept for Reserve to report the expiry
		}
		if e.rec.stuck(now) {
			out = append(out, e.rec.clone())
		}
	}
	m.mu.Unlock()
	sortRecords(out)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// live returns k's entry, or nil when it has expired; it drops an entry
// past its expiry grace, and keeps one within it for Reserve to report the
// expiry. live requires that m.mu is held.
func (m *Memory) live(k Key, now time.Time) *memoryEntry {
	e, ok := m.entries[k]
	if !ok {
		return nil
	}
	if now.After(e.rec.ExpiresAt) {
		if now.After(e.rec.ExpiresAt.Add(ExpiryGrace)) {
			m.drop(k, e)
		}
		return nil
	}
	return e
}

// owned returns k's entry if token is current. owned requires that m.mu is
// held.
func (m *Memory) owned(k Key, token int64, now time.Time) (*memoryEntry, error) {
	e := m.live(k, now)
	if e == nil || e.rec.State != StateInProgress || e.token != token {
		return nil, notOwner(k)
	}
	return e, nil
}

// evictSome drops up to two records past their expiry grace, starting at a
// random place in the map. evictSome requires that m.mu is held.
func (m *Memory) evictSome(now time.Time) {
	n := 0
	for k, e := range m.entries {
		if now.After(e.rec.ExpiresAt.Add(ExpiryGrace)) {
			m.drop(k, e)
		}
		if n++; n == 2 {
			return
		}
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
