package ledger

import (
	"context"
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
}

// Memory is the in-process Store, the embedded default: records live in a
// map behind one mutex, so every operation is atomic. It forgets
// everything when the process exits, so it protects against duplicates
// within one process only.
//
// It runs no goroutines. Expired records are dropped when touched, by
// Sweep, and by Reserve, which examines up to two other records per call,
// the way Redis expires keys actively; memory therefore follows the live
// records.
type Memory struct {
	mu      sync.Mutex // guards entries
	entries map[Key]*memoryEntry

	cfg Config
	now func() time.Time
}

type memoryEntry struct {
	rec   Record
	token int64
}

// NewMemory returns an empty Memory store.
func NewMemory(cfg MemoryConfig) *Memory {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Memory{entries: map[Key]*memoryEntry{}, cfg: cfg.Config, now: now}
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

	now := m.now() // before the lock: no callbacks while it is held
	m.mu.Lock()
	defer m.mu.Unlock()
	m.evictSome(now)
	e := m.live(req.Key, now)

	in := Input{
		Fingerprint:  req.Fingerprint,
		Limited:      req.Limited,
		Reconciler:   req.Reconciler,
		KeysHonoured: req.KeysHonoured,
	}
	if e != nil {
		in.State = e.rec.State
		in.StoredFingerprint = e.rec.Fingerprint
		in.LeaseExpired = e.rec.State == StateInProgress && !now.Before(e.rec.LeaseUntil)
	}
	res := Reservation{Decision: Resolve(in)}

	if res.Verdict == VerdictCreated {
		e = &memoryEntry{
			token: newToken() - 1, // the grant below adds one
			rec: Record{
				Key:         req.Key,
				Fingerprint: req.Fingerprint,
				CreatedAt:   now,
				ExpiresAt:   now.Add(retention),
			},
		}
		m.entries[req.Key] = e
	}
	if res.Verdict.Owns() {
		e.token++
		e.rec.State = StateInProgress
		e.rec.Owner = req.Owner
		e.rec.Reason = ""
		e.rec.LeaseUntil = now.Add(lease)
		// Kept a lease past the lease's end, so that a worker that died
		// holding it is still seen as stuck, not as absent.
		e.rec.ExpiresAt = later(e.rec.ExpiresAt, e.rec.LeaseUntil.Add(lease))
		e.rec.Attempts = appendAttempt(e.rec.Attempts, m.cfg.HistoryCap(), Attempt{
			At: now, Class: res.Verdict.String(), Owner: req.Owner, Token: e.token,
		})
		res.Token = e.token
	}
	if res.Verdict == VerdictPending {
		res.RetryAfter = e.rec.LeaseUntil.Sub(now)
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
	e.rec.Attempts = appendAttempt(e.rec.Attempts, m.cfg.HistoryCap(), Attempt{At: now, Class: class, Owner: e.rec.Owner, Token: token})
	return e.rec.Attempts[len(e.rec.Attempts)-1], nil
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
	e.rec.State = StateCompleted
	e.rec.LeaseUntil = time.Time{}
	e.rec.Outcome = stored
	return nil
}

// Fail implements Store.
func (m *Memory) Fail(ctx context.Context, k Key, token int64, f Failure) error {
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
	e.rec.State = StateFailed
	if f.EffectPossible {
		e.rec.State = StateUncertain
	}
	e.rec.LeaseUntil = time.Time{}
	e.rec.Reason = f.Reason
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
		if now.After(e.rec.ExpiresAt) {
			delete(m.entries, k)
			continue
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

// live returns k's entry, dropping it if it has expired. live requires
// that m.mu is held.
func (m *Memory) live(k Key, now time.Time) *memoryEntry {
	e, ok := m.entries[k]
	if !ok {
		return nil
	}
	if now.After(e.rec.ExpiresAt) {
		delete(m.entries, k)
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

// evictSome drops up to two expired records, starting at a random place
// in the map. evictSome requires that m.mu is held.
func (m *Memory) evictSome(now time.Time) {
	n := 0
	for k, e := range m.entries {
		if now.After(e.rec.ExpiresAt) {
			delete(m.entries, k)
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
