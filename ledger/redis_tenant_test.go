package ledger

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/internal/redistest"
)

// TestRedisTenantQuotaRefusesNewRecords pins RedisConfig.TenantMaxRecords:
// a tenant at its quota cannot add a record (nothing is written), still
// gets the records it holds, and leaves other tenants untouched; the
// index never names the tenant.
func TestRedisTenantQuotaRefusesNewRecords(t *testing.T) {
	client := redistest.Client(t)
	prefix := redistest.Prefix(t)
	s := mustRedis(t, client, RedisConfig{Prefix: prefix, TenantMaxRecords: 2})
	ctx := t.Context()
	key := func(tenant, k string) Key { return Key{Tenant: tenant, Operation: "charge", Key: k} }

	created := 0
	for _, k := range []string{"1", "2", "3", "4"} {
		res, err := s.Reserve(ctx, ReserveRequest{Key: key("acme", k), Fingerprint: fpA})
		switch {
		case err == nil && res.Verdict == VerdictCreated:
			created++
		case !errors.Is(err, ErrTenantFull) || !errors.Is(err, ErrFull):
			t.Fatalf("Reserve %s: %s, %v; want created or ErrTenantFull", k, res.Verdict, err)
		}
	}
	if created != 2 {
		t.Fatalf("acme created %d records under a quota of 2", created)
	}
	if _, err := s.Get(ctx, key("acme", "3")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a refused record was written: %v", err)
	}
	if res, err := s.Reserve(ctx, ReserveRequest{Key: key("acme", "1"), Fingerprint: fpA}); err != nil || res.Verdict != VerdictPending {
		t.Fatalf("a record acme holds: %s, %v; want pending", res.Verdict, err)
	}
	if res, err := s.Reserve(ctx, ReserveRequest{Key: key("globex", "1"), Fingerprint: fpA}); err != nil || res.Verdict != VerdictCreated {
		t.Fatalf("another tenant: %s, %v; want created", res.Verdict, err)
	}
	names, err := client.Keys(ctx, prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if strings.Contains(n, "acme") || strings.Contains(n, "globex") {
			t.Errorf("key %q names a tenant", n)
		}
	}
	// A record written before the quota was set is not new to it.
	plain := mustRedis(t, client, RedisConfig{Prefix: prefix})
	if _, err := plain.Reserve(ctx, ReserveRequest{Key: key("acme", "old"), Fingerprint: fpA}); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Reserve(ctx, ReserveRequest{Key: key("acme", "old"), Fingerprint: fpA}); err != nil || res.Verdict != VerdictPending {
		t.Fatalf("a record written before the quota: %s, %v; want pending", res.Verdict, err)
	}
	if stuck, err := s.Sweep(ctx, 0); err != nil {
		t.Fatalf("Sweep with tenant indexes present: %d, %v", len(stuck), err)
	}
}

// countedUntilGone fails t unless k's tenant index counts k at least until
// Redis drops k's record: the quota's promise that a record is counted
// until it is gone, at the latest.
func countedUntilGone(t *testing.T, s *Redis, k Key) {
	t.Helper()
	ctx := t.Context()
	score, err := s.client.ZScore(ctx, s.tenantIndex(k.Tenant), k.ID()).Result()
	if err != nil {
		t.Fatal(err)
	}
	gone, err := s.client.PExpireTime(ctx, s.keyName(k)).Result()
	if err != nil {
		t.Fatal(err)
	}
	if int64(score) < gone.Milliseconds() {
		t.Fatalf("the tenant index stops counting the record %d ms before Redis drops it", gone.Milliseconds()-int64(score))
	}
}

// A record created anew over its expired predecessor (still kept for
// ExpiryGrace), and a record whose owner renewed its lease past its
// retention, are counted as long as they now live.
func TestRedisTenantIndexCountsARecordAsLongAsItLives(t *testing.T) {
	s := mustRedis(t, redistest.Client(t), RedisConfig{Prefix: redistest.Prefix(t), TenantMaxRecords: 10})
	ctx := t.Context()
	t.Run("created anew over an expired record", func(t *testing.T) {
		k := Key{Tenant: "acme", Operation: "report", Key: "daily"}
		if _, err := s.Reserve(ctx, ReserveRequest{Key: k, Fingerprint: fpA, Lease: 10 * time.Millisecond, Retention: time.Second}); err != nil {
			t.Fatal(err)
		}
		// Past its retention, as a day later.
		if err := s.client.HSet(ctx, s.keyName(k), "ea", "1").Err(); err != nil {
			t.Fatal(err)
		}
		res, err := s.Reserve(ctx, ReserveRequest{Key: k, Fingerprint: fpA, Lease: 10 * time.Millisecond, Retention: time.Hour})
		if err != nil || res.Verdict != VerdictCreated || !res.Expired {
			t.Fatalf("Reserve over the expired record: %s, expired %v, %v", res.Verdict, res.Expired, err)
		}
		countedUntilGone(t, s, k)
	})
	t.Run("renewed past its retention", func(t *testing.T) {
		k := Key{Tenant: "acme", Operation: "export", Key: "long"}
		res, err := s.Reserve(ctx, ReserveRequest{Key: k, Fingerprint: fpA, Lease: time.Second, Retention: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Renew(ctx, k, res.Token, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		countedUntilGone(t, s, k)
	})
}
