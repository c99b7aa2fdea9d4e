package ledger

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/internal/fakeclock"
)

// TestMemoryFloodBounded pins that ledger.Memory, the middleware's default
// store, is capped in bytes (uncapped, 100k distinct keys with 1 KiB
// replies add 162 MiB for 24 hours). Under a flood of distinct keys with
// large replies it stops at its byte cap, answers ErrFull, and the heap
// stays near the cap.
func TestMemoryFloodBounded(t *testing.T) {
	const maxBytes = 8 << 20
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m := NewMemory(MemoryConfig{Now: clock.Now, MaxBytes: maxBytes})
	body := make([]byte, 32<<10)
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	stored, full := 0, 0
	for i := range 4000 { // 4000 x 32 KiB = 125 MiB unbounded
		k := Key{Tenant: "mallory", Operation: "POST /things", Key: fmt.Sprint("k", i)}
		res, err := m.Reserve(t.Context(), ReserveRequest{Key: k, Fingerprint: "fp"})
		if errors.Is(err, ErrFull) {
			full++
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Complete(t.Context(), k, res.Token, Outcome{Status: 201, Body: body}); err != nil {
			t.Fatal(err)
		}
		stored++
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	if full == 0 || m.quota.bytes > maxBytes+int64(len(body))+recordOverhead*4 {
		t.Fatalf("stored %d, refused %d, accounted %d bytes; want refusals and at most about %d bytes", stored, full, m.quota.bytes, maxBytes)
	}
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 3*maxBytes {
		t.Errorf("heap grew %d MiB under a %d MiB cap", grew>>20, maxBytes>>20)
	}
	t.Logf("stored %d records (%d MiB accounted), refused %d", stored, m.quota.bytes>>20, full)
}

// TestMemoryFullNeverEvictsInProgress: a store at MaxRecords refuses a new
// action with ErrFull and keeps every record in progress; once records
// expire, it drops them and admits again.
func TestMemoryFullNeverEvictsInProgress(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m := NewMemory(MemoryConfig{Now: clock.Now, MaxRecords: 10})
	key := func(i int) Key { return Key{Operation: "op", Key: fmt.Sprint(i)} }
	for i := range 10 {
		if _, err := m.Reserve(t.Context(), ReserveRequest{Key: key(i), Lease: time.Minute, Retention: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(2 * time.Second) // past the full scan's spacing
	if _, err := m.Reserve(t.Context(), ReserveRequest{Key: key(10)}); !errors.Is(err, ErrFull) {
		t.Fatalf("Reserve in a full store: %v, want ErrFull", err)
	}
	for i := range 10 {
		if r, err := m.Get(t.Context(), key(i)); err != nil || r.State != StateInProgress {
			t.Fatalf("record %d: %v %v; want it kept in progress", i, r.State, err)
		}
	}
	// Existing actions still answer: a retry of one is pending, not full.
	if res, err := m.Reserve(t.Context(), ReserveRequest{Key: key(3)}); err != nil || res.Verdict != VerdictPending {
		t.Fatalf("retry of a held action: %v %v", res.Verdict, err)
	}
	clock.Advance(2 * time.Hour)
	if _, err := m.Reserve(t.Context(), ReserveRequest{Key: key(10)}); err != nil {
		t.Fatalf("Reserve after every record expired: %v", err)
	}
	if _, err := m.Sweep(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	if m.quota.records != 1 || m.quota.bytes != m.entries[key(10)].size {
		t.Errorf("store counts %d records, %d bytes; want the one live record", m.quota.records, m.quota.bytes)
	}
}

// TestMemoryTenantQuota: one tenant at its quota gets ErrTenantFull (which
// is also ErrFull), another tenant is still served.
func TestMemoryTenantQuota(t *testing.T) {
	m := NewMemory(MemoryConfig{TenantMaxRecords: 3})
	for i := range 4 {
		_, err := m.Reserve(t.Context(), ReserveRequest{Key: Key{Tenant: "mallory", Operation: "op", Key: fmt.Sprint(i)}})
		if want := i == 3; errors.Is(err, ErrTenantFull) != want || (want && !errors.Is(err, ErrFull)) {
			t.Fatalf("reserve %d of mallory: %v", i, err)
		}
	}
	if _, err := m.Reserve(t.Context(), ReserveRequest{Key: Key{Tenant: "alice", Operation: "op", Key: "0"}}); err != nil {
		t.Fatalf("alice refused because of mallory: %v", err)
	}
}

// A full store says when it can next make room: when its oldest record
// reaches its retention (records are never dropped before), and not a
// made-up minute.
func TestMemoryFullSaysWhenRoomComesBack(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m := NewMemory(MemoryConfig{TenantMaxRecords: 1, MaxRecords: 2, Now: func() time.Time { return now }})
	if _, err := m.Reserve(t.Context(), ReserveRequest{Key: Key{Tenant: "a", Operation: "op", Key: "1"}}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour)
	if _, err := m.Reserve(t.Context(), ReserveRequest{Key: Key{Tenant: "b", Operation: "op", Key: "1"}}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Second) // past the full scan's spacing
	for _, tt := range []struct {
		tenant string
		want   error
		after  time.Duration
	}{
		{"a", ErrTenantFull, DefaultRetention - time.Hour - 2*time.Second},
		{"c", ErrFull, DefaultRetention - time.Hour - 2*time.Second},
	} {
		_, err := m.Reserve(t.Context(), ReserveRequest{Key: Key{Tenant: tt.tenant, Operation: "op", Key: "2"}})
		var le *Error
		if !errors.Is(err, tt.want) || !errors.As(err, &le) || le.RetryAfter != tt.after {
			t.Fatalf("tenant %s: %v; want %v with RetryAfter %v", tt.tenant, err, tt.want, tt.after)
		}
	}
}

// TestMemoryOutcomesInFlightStayWithinTheQuotas: the byte caps are checked
// when a record is created, small; its outcome comes later. A tenant that
// holds many actions in progress at once, each answered with a large body,
// stays within its quota (and the store within its cap): the outcomes that
// would pass it are kept without their body, their hash and length kept,
// and under a tenant quota another tenant still has its share.
func TestMemoryOutcomesInFlightStayWithinTheQuotas(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  MemoryConfig
		cap  int64
	}{
		{"tenant quota", MemoryConfig{TenantMaxBytes: 64 << 10}, 64 << 10},
		{"store cap", MemoryConfig{MaxBytes: 64 << 10}, 64 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMemory(tc.cfg)
			body := make([]byte, 8<<10)
			var tokens []int64
			var keys []Key
			for i := range 40 { // 40 x 8 KiB: five times the quota, admitted small
				k := Key{Tenant: "mallory", Operation: "POST /things", Key: fmt.Sprint("k", i)}
				res, err := m.Reserve(t.Context(), ReserveRequest{Key: k, Fingerprint: "fp"})
				if err != nil {
					t.Fatalf("reserve %d: %v", i, err)
				}
				keys, tokens = append(keys, k), append(tokens, res.Token)
			}
			omitted := 0
			for i, k := range keys {
				if err := m.Complete(t.Context(), k, tokens[i], Outcome{Status: 201, Body: body}); err != nil {
					t.Fatalf("complete %d: %v", i, err)
				}
				rec, err := m.Get(t.Context(), k)
				if err != nil {
					t.Fatal(err)
				}
				o := rec.Outcome
				if o.BodyOmitted {
					omitted++
					if o.Body != nil || o.BodyLen != int64(len(body)) || o.BodyHash == "" {
						t.Fatalf("outcome %d kept without its body: %+v; want no body, its hash and length", i, o)
					}
				}
			}
			m.mu.Lock()
			held := m.quota.bytes
			m.mu.Unlock()
			// Records without a body still grow a little past their
			// creation: the status, the hash and the attempt.
			if slack := int64(len(keys)) * 256; held > tc.cap+slack || omitted == 0 || omitted == len(keys) {
				t.Fatalf("%d bytes held, %d of %d outcomes without their body; want at most %d and some of each", held, omitted, len(keys), tc.cap+slack)
			}
			if tc.cfg.TenantMaxBytes == 0 {
				return
			}
			k := Key{Tenant: "alice", Operation: "POST /things", Key: "a1"}
			res, err := m.Reserve(t.Context(), ReserveRequest{Key: k, Fingerprint: "fp"})
			if err != nil {
				t.Fatalf("alice refused because of mallory: %v", err)
			}
			if err := m.Complete(t.Context(), k, res.Token, Outcome{Status: 201, Body: body}); err != nil {
				t.Fatal(err)
			}
			if rec, err := m.Get(t.Context(), k); err != nil || rec.Outcome.BodyOmitted {
				t.Fatalf("alice's outcome: %+v, %v; want it kept whole", rec.Outcome, err)
			}
		})
	}
}
