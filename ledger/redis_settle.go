package ledger

import (
	"context"
	_ "embed" // settle.lua
	"fmt"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/settle.lua
var settleLua string

// Settle implements Settler with one script run, which writes the
// outcome or the failure and the trail (hash fields xb, xr, xa, xp, xf)
// under the token's fence. With RedisConfig.WaitReplicas it waits for the
// replicas as Complete does. A settled action's entry in the held index
// (Redis.Held) is removed after the script, best effort: an entry left
// behind is checked against its record and dropped when the index is
// next read.
func (r *Redis) Settle(ctx context.Context, k Key, token int64, res Resolution) error {
	s, err := settlementOf(res)
	if err != nil {
		return err
	}
	args := []any{token, flag(s.Applied), s.By, s.Reason, s.Reference, NewNonce()}
	if s.Applied {
		o, err := r.sealedOutcome(k, res.Outcome)
		if err != nil {
			return err
		}
		args = append(args, o...)
	}
	// The entry's version is read before the record changes, so that a
	// transition to uncertain after it (a retry that fails again) keeps
	// its entry.
	ver, verErr := r.heldVersion(ctx, k)
	_, err = roundTrip(r, ctx, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, r.replicated(ctx, func(c redis.Scripter) (bool, error) {
			n, err := r.settle.Run(ctx, c, []string{r.keyName(k)}, args...).Int64()
			if err != nil {
				return false, fmt.Errorf("ledger: redis settle: %w", err)
			}
			if n == 0 {
				return false, notOwner(k)
			}
			return true, nil
		})
	})
	if err == nil && verErr == nil && ver != "" {
		r.unindexHeld(ctx, map[string]string{k.ID(): ver})
	}
	return err
}

// decodeSettlement reads the trail fields of a record's hash: nil when
// no operator settled it.
func decodeSettlement(f map[string]string) (*Settlement, error) {
	if _, ok := f["xa"]; !ok {
		return nil, nil
	}
	at, err := unixMilli(f["xa"])
	if err != nil {
		return nil, fmt.Errorf("%w: field xa = %q", ErrCorrupt, f["xa"])
	}
	return &Settlement{By: f["xb"], Reason: f["xr"], At: at, Applied: f["xp"] == "1", Reference: f["xf"]}, nil
}
