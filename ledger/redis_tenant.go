package ledger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// tenantIndex returns the Redis key of tenant's record index: a hash of
// the tenant, never the raw name, in braces so a cluster gives each
// tenant's index one slot. It does not match Sweep's pattern, which wants
// the brace right after the prefix.
func (r *Redis) tenantIndex(tenant string) string {
	h := sha256.Sum256([]byte("retrybudget-ledger-tenant\x00" + tenant))
	return r.prefix + "tenant:{" + hex.EncodeToString(h[:]) + "}"
}

// admitSlack is how much longer than the record can live the tenant index
// counts it from its admission. The index is scored on Redis's clock when
// tenant.lua admits the Reserve, and the record's life starts on it when
// reserve.lua runs, a round trip later: without the slack the record
// would outlive its count by that round trip.
const admitSlack = time.Minute

// admitTenant checks k against its tenant's quota before Reserve (see
// RedisConfig.TenantMaxRecords) and counts it when it is admitted. It
// returns an error wrapping ErrTenantFull when k would be a new record
// beyond the quota.
func (r *Redis) admitTenant(ctx context.Context, k Key, lease, retention time.Duration) error {
	life := max(retention, 2*lease) + ExpiryGrace + admitSlack
	reply, err := roundTrip(r, ctx, func(ctx context.Context) ([]int64, error) {
		return r.tenant.Run(ctx, r.client, []string{r.tenantIndex(k.Tenant)},
			k.ID(), r.tenantMax, life.Milliseconds()).Int64Slice()
	})
	switch {
	case err != nil:
		return fmt.Errorf("ledger: redis tenant quota: %w", err)
	case len(reply) != 2:
		return fmt.Errorf("%w: tenant quota reply %v", ErrCorrupt, reply)
	case reply[0] == 1:
		return nil
	}
	// A record the index does not know (written before the quota was set)
	// is not new: its replay or takeover goes.
	n, err := roundTrip(r, ctx, func(ctx context.Context) (int64, error) {
		return r.client.Exists(ctx, r.keyName(k)).Result()
	})
	switch {
	case err != nil:
		return fmt.Errorf("ledger: redis tenant quota: %w", err)
	case n == 1:
		return nil
	}
	return fmt.Errorf("%w: the tenant holds %d records, its quota is %d", ErrTenantFull, reply[1], r.tenantMax)
}

// keepTenantCount counts k in its tenant's index at least as long as a
// lease of lease just renewed keeps the record (two leases from now, and
// ledger.ExpiryGrace): a call that renews past its record's retention
// must not outlive its count (see RedisConfig.TenantMaxRecords). Only an
// ID the index holds is extended.
func (r *Redis) keepTenantCount(ctx context.Context, k Key, lease time.Duration) error {
	_, err := roundTrip(r, ctx, func(ctx context.Context) (int64, error) {
		return r.tenantKeep.Run(ctx, r.client, []string{r.tenantIndex(k.Tenant)},
			k.ID(), (2*lease + ExpiryGrace).Milliseconds()).Int64()
	})
	if err != nil {
		return fmt.Errorf("ledger: redis tenant quota: %w", err)
	}
	return nil
}
