package ledger

import (
	"fmt"
	"time"
)

// Defaults of a MemoryConfig's zero caps.
const (
	// DefaultMaxRecords is the most records a Memory store holds.
	DefaultMaxRecords = 100_000
	// DefaultMaxBytes is the most bytes of records a Memory store holds,
	// as the store estimates them: 64 MiB.
	DefaultMaxBytes = 64 << 20
)

// fullSweepEvery spaces the full scans a full store runs to drop expired
// and failed records, so that a flood against a full store costs one scan
// per interval, not one per request.
const fullSweepEvery = time.Second

// recordOverhead is what a record costs beside its variable parts: the map
// entry, the struct, the time values and slice headers.
const recordOverhead = 512

// quota counts what a Memory store holds against its caps. Its fields are
// guarded by the Memory's mu.
type quota struct {
	maxRecords, maxBytes       int64 // <= 0: no cap
	tenantRecords, tenantBytes int64 // <= 0: no quota
	records, bytes             int64
	tenants                    map[string]*usage
	// sweptAt is when a full store last scanned for records to drop.
	sweptAt time.Time
	// freeAt is, as of the last scan, the earliest time a record of the
	// store could be dropped (its retention or a failed record's lease
	// ends): a full store has no room before then.
	freeAt time.Time
}

// usage is one tenant's share of a store.
type usage struct {
	records, bytes int64
	// freeAt is freeAt for the tenant's own records.
	freeAt time.Time
}

func newQuota(c MemoryConfig) quota {
	pick := func(v, def int64) int64 {
		switch {
		case v == 0:
			return def
		case v < 0:
			return 0
		}
		return v
	}
	return quota{
		maxRecords:    pick(int64(c.MaxRecords), DefaultMaxRecords),
		maxBytes:      pick(c.MaxBytes, DefaultMaxBytes),
		tenantRecords: pick(int64(c.TenantMaxRecords), 0),
		tenantBytes:   pick(c.TenantMaxBytes, 0),
		tenants:       map[string]*usage{},
	}
}

// admit returns nil when a new record of size bytes for k's tenant fits,
// and otherwise an *Error wrapping ErrTenantFull or ErrFull whose
// RetryAfter is how long, as of the last scan, until a record could be
// dropped to make room (zero when no scan has told).
func (q *quota) admit(k Key, size int64, now time.Time) error {
	u := q.tenants[k.Tenant]
	if u == nil {
		u = &usage{}
	}
	until := func(t time.Time) time.Duration {
		if t.IsZero() || !t.After(now) {
			return 0
		}
		return t.Sub(now)
	}
	if (q.tenantRecords > 0 && u.records+1 > q.tenantRecords) || (q.tenantBytes > 0 && u.bytes+size > q.tenantBytes) {
		return &Error{Err: fmt.Errorf("%w: the tenant holds %d records, %d bytes", ErrTenantFull, u.records, u.bytes),
			Key: k, RetryAfter: until(u.freeAt)}
	}
	if (q.maxRecords > 0 && q.records+1 > q.maxRecords) || (q.maxBytes > 0 && q.bytes+size > q.maxBytes) {
		return &Error{Err: fmt.Errorf("%w: %d records, %d bytes", ErrFull, q.records, q.bytes),
			Key: k, RetryAfter: until(q.freeAt)}
	}
	return nil
}

// exceeds reports whether size bytes more for tenant would take it past
// its byte quota, or the store past its byte cap.
func (q *quota) exceeds(tenant string, size int64) bool {
	if size <= 0 {
		return false
	}
	var held int64
	if u := q.tenants[tenant]; u != nil {
		held = u.bytes
	}
	return (q.tenantBytes > 0 && held+size > q.tenantBytes) || (q.maxBytes > 0 && q.bytes+size > q.maxBytes)
}

// add counts n records and size bytes more (or fewer, when negative) for
// tenant.
func (q *quota) add(tenant string, n, size int64) {
	u := q.tenants[tenant]
	if u == nil {
		u = &usage{}
		q.tenants[tenant] = u
	}
	u.records += n
	u.bytes += size
	q.records += n
	q.bytes += size
	if u.records <= 0 {
		delete(q.tenants, tenant)
	}
}

// recordSize estimates what rec costs in memory.
func recordSize(rec *Record) int64 {
	n := recordOverhead + len(rec.Key.Tenant) + len(rec.Key.Operation) + len(rec.Key.Key) +
		len(rec.Fingerprint) + len(rec.Owner) + len(rec.Reason)
	for _, a := range rec.Attempts {
		n += 64 + len(a.Class) + len(a.Owner)
	}
	if o := rec.Outcome; o != nil {
		n += 64 + len(o.Body) + len(o.BodyHash)
		for k, vs := range o.Header {
			n += len(k) + 16
			for _, v := range vs {
				n += len(v) + 16
			}
		}
	}
	return int64(n)
}

// track sets e's accounted size to what its record costs now. track
// requires that m.mu is held.
func (m *Memory) track(e *memoryEntry) {
	size := recordSize(&e.rec)
	m.quota.add(e.rec.Key.Tenant, 0, size-e.size)
	e.size = size
}

// drop removes k's entry and its share of the caps. drop requires that
// m.mu is held.
func (m *Memory) drop(k Key, e *memoryEntry) {
	delete(m.entries, k)
	m.quota.add(k.Tenant, -1, -e.size)
}

// admit returns nil when a new record for req, its fingerprint sealed as
// sealed, fits the caps, first dropping, at most once per fullSweepEvery,
// every expired record and every failed one whose lease is over (a failed
// action may run again anyway, so forgetting it loses nothing). It never
// drops a record in progress, completed or uncertain: that would let an
// effect happen twice. admit requires that m.mu is held.
func (m *Memory) admit(req ReserveRequest, sealed string, now time.Time) error {
	size := recordSize(&Record{Key: req.Key, Fingerprint: sealed, Owner: req.Owner,
		Attempts: []Attempt{{Class: VerdictCreated.String(), Owner: req.Owner}}})
	err := m.quota.admit(req.Key, size, now)
	if err == nil || now.Sub(m.quota.sweptAt) < fullSweepEvery && !m.quota.sweptAt.IsZero() {
		return err
	}
	m.quota.sweptAt = now
	m.quota.freeAt = time.Time{}
	for _, u := range m.quota.tenants {
		u.freeAt = time.Time{}
	}
	earlier := func(a, b time.Time) time.Time {
		if a.IsZero() || b.Before(a) {
			return b
		}
		return a
	}
	for k, e := range m.entries {
		if now.After(e.rec.ExpiresAt) || (e.rec.State == StateFailed && !now.Before(e.rec.LeaseUntil)) {
			m.drop(k, e)
			continue
		}
		free := e.rec.ExpiresAt
		if e.rec.State == StateFailed {
			free = e.rec.LeaseUntil
		}
		m.quota.freeAt = earlier(m.quota.freeAt, free)
		if u := m.quota.tenants[k.Tenant]; u != nil {
			u.freeAt = earlier(u.freeAt, free)
		}
	}
	return m.quota.admit(req.Key, size, now)
}
