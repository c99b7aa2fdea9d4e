package ledger

import (
	"errors"
	"strings"
	"testing"

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
