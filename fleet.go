package retrybudget

import (
	"context"
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/retrybudget/retrybudget/budget"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/limiter"
)

// ErrInvalidConfig is wrapped by NewFleet's errors: a required field is
// missing or a value is out of range. The message names the field and what
// to set it to; a component's own error (such as ledger.ErrNoFingerprintKey)
// is wrapped too. It is not a reason a call stops (see ReasonCode).
var ErrInvalidConfig = errors.New("retrybudget: invalid config")

// minSecretLen is the shortest deployment secret NewFleet accepts: 16
// bytes, as ledger.MinFingerprintKeyLen. 32 random bytes are usual.
const minSecretLen = 16

// secretEnv is the environment variable the documentation keeps a
// deployment secret in, base64-encoded.
const secretEnv = "RETRYBUDGET_SECRET"

// The info labels of the keys NewFleet derives from a deployment secret
// (HKDF-SHA256, RFC 5869 §3.2): one label per use, so no two uses share a
// key and a key leaked from one use says nothing about another's. Changing
// a label changes that key on every process, so they are fixed.
const (
	fingerprintKeyInfo = "retrybudget/v1 ledger fingerprint key"
	boundaryKeyInfo    = "retrybudget/v1 limiter boundary key"
	destinationKeyInfo = "retrybudget/v1 budget destination key"
)

// FleetConfig is what NewFleet builds a fleet's Transport from: a Redis
// client, the deployment's secrets, the worker's owner name, the
// provider's preset and its limit. Redis and Secrets are required (unless
// every key is set by hand); the other fields have the defaults each says.
// The component configs (Ledger, Limiter, Budget, Transport) are open to
// override: a field set there wins over what NewFleet would set.
type FleetConfig struct {
	// Redis is the client every process of the fleet shares: it holds the
	// ledger, the limiter and the budget. Required.
	Redis redis.UniversalClient

	// Secrets are the deployment's secrets, the newest first: the same on
	// every process, at least minSecretLen random bytes each (32 is
	// usual; the docs keep one base64-encoded in RETRYBUDGET_SECRET),
	// never in Redis. Every key the fleet needs is derived from them, one
	// per use:
	//   - Ledger.FingerprintKeys: one per secret, in order, so the
	//     newest seals new records and every one verifies (rotation: put
	//     the new secret first, keep the old one for the ledger's
	//     retention);
	//   - Limiter.BoundaryKey and Budget.DestinationKey: from the last
	//     (oldest) secret, so a process that lists a new secret in front
	//     of the old one shares the limiter and the budget with one that
	//     does not yet. Dropping the oldest secret moves them to the next:
	//     during that deploy old and new processes count the limit apart.
	// A key set by hand in Ledger, Limiter or Budget is kept as it is.
	Secrets [][]byte

	// Owner names this worker in ledger records (LedgerConfig.Owner):
	// a name that survives a restart, such as the pod's. Empty means the
	// Transport's default, hostname:pid.
	Owner string

	// Preset is the provider's route, such as presets.Stripe(): its
	// Config.Boundary (the provider's metering unit) is where the limiter
	// counts its calls. The zero Route means no route: every call uses the
	// Transport's own Config.
	Preset Route

	// Limits are the provider's limits for one boundary, such as
	// []limiter.Limit{limiter.PerSecond(100)}. Nil means
	// Limiter.Limits, and with neither the limiter only shares the
	// provider's pauses (Cooldown), as limiter.RedisConfig says.
	Limits []limiter.Limit

	// Ledger configures the Redis ledger. FingerprintKeys nil means the
	// keys derived from Secrets.
	Ledger ledger.RedisConfig
	// FirstCome serves a saturated limit first come, first served: the
	// limiter gets no FairQueue (for comparison, or with Prefetch).
	FirstCome bool

	// Limiter configures the Redis limiter. BoundaryKey nil means the key
	// derived from Secrets; Queue nil means a FairQueue, unless FirstCome
	// is set or Prefetch is above 1 (which cannot be combined with a
	// queue).
	Limiter limiter.RedisConfig
	// Budget configures the Redis retry budget. DestinationKey nil means
	// the key derived from Secrets.
	Budget budget.RedisConfig

	// Transport configures the Transport. NewFleet sets Ledger.Store,
	// Limiter and Budget when they are nil, Ledger.Owner from Owner when
	// it is empty, Boundary to limiter.ByCredential() (the limit is per
	// API key, whatever the host) when it is nil, and Routes to the Preset
	// when Routes is nil.
	Transport Config
}

// Fleet is a Transport wired for a fleet of processes, and the Redis
// components it shares with them, for the calls a deployment makes on them
// (Prepare at startup, a ledger Monitor or Sweep).
type Fleet struct {
	// Transport is the RoundTripper: put it in an http.Client or an SDK.
	Transport *Transport
	// Ledger is the shared Redis ledger (the Transport's Ledger.Store),
	// or nil when Transport.Ledger.Store was set by hand.
	Ledger *ledger.Redis
	// Limiter is the shared Redis limiter (the Transport's Limiter), or
	// nil when Transport.Limiter was set by hand.
	Limiter *limiter.Redis
	// Budget is the shared Redis retry budget (the Transport's Budget), or
	// nil when Transport.Budget was set by hand.
	Budget *budget.Redis
}

// NewFleet builds a Transport for one process of a fleet from cfg: the
// Redis ledger (one record per action across the fleet), the Redis limiter
// at the preset's boundary with a fair queue (the provider's limit shared,
// tenants served in turn when it is saturated), and the Redis retry budget.
// It returns an error wrapping ErrInvalidConfig (and the component's own
// sentinel, such as ledger.ErrNoFingerprintKey) that names the field to
// set.
func NewFleet(cfg FleetConfig) (*Fleet, error) {
	if cfg.Redis == nil {
		return nil, fmt.Errorf("%w: FleetConfig.Redis is nil: set it to the fleet's shared client, such as redis.NewClient(&redis.Options{Addr: os.Getenv(\"REDIS_ADDR\"), ContextTimeoutEnabled: true})", ErrInvalidConfig)
	}
	keys, err := fleetKeys(cfg)
	if err != nil {
		return nil, err
	}
	f := &Fleet{}
	tc := cfg.Transport
	if tc.Ledger.Store == nil {
		lc := cfg.Ledger
		if lc.FingerprintKeys == nil {
			lc.FingerprintKeys = keys.fingerprint
		}
		if f.Ledger, err = ledger.NewRedis(cfg.Redis, lc); err != nil {
			return nil, fmt.Errorf("%w: FleetConfig.Ledger: %w", ErrInvalidConfig, err)
		}
		tc.Ledger.Store = f.Ledger
	}
	if tc.Ledger.Owner == "" {
		tc.Ledger.Owner = cfg.Owner
	}
	if tc.Limiter == nil {
		lc := cfg.Limiter
		if lc.BoundaryKey == nil {
			lc.BoundaryKey = keys.boundary
		}
		if len(cfg.Limits) > 0 {
			lc.Limits = cfg.Limits
		}
		if lc.Queue == nil && !cfg.FirstCome && lc.Prefetch <= 1 {
			lc.Queue = &limiter.FairQueue{}
		}
		if f.Limiter, err = limiter.NewRedis(cfg.Redis, lc); err != nil {
			return nil, fmt.Errorf("%w: FleetConfig.Limiter: %w", ErrInvalidConfig, err)
		}
		tc.Limiter = f.Limiter
	}
	if tc.Budget == nil {
		bc := cfg.Budget
		if bc.DestinationKey == nil {
			bc.DestinationKey = keys.destination
		}
		if f.Budget, err = budget.NewRedis(cfg.Redis, bc); err != nil {
			return nil, fmt.Errorf("%w: FleetConfig.Budget: %w", ErrInvalidConfig, err)
		}
		tc.Budget = f.Budget
	}
	if tc.Routes == nil && cfg.Preset.Name != "" {
		tc.Routes = []Route{cfg.Preset}
	}
	if tc.Boundary == nil {
		tc.Boundary = limiter.ByCredential()
	}
	f.Transport = New(tc)
	return f, nil
}

// Prepare connects to Redis and loads the limiter's scripts, so the first
// decision of a fail-closed limiter is not a refusal on a slow link (see
// limiter.Redis.Prepare). Call it at startup; it does nothing without a
// limiter built by NewFleet.
func (f *Fleet) Prepare(ctx context.Context) error {
	if f.Limiter == nil {
		return nil
	}
	return f.Limiter.Prepare(ctx)
}

// fleetKeyset is the keys NewFleet derives from the secrets; nil where
// every component that needs the key has it set by hand.
type fleetKeyset struct {
	fingerprint ledger.FingerprintKeys
	boundary    []byte
	destination []byte
}

// fleetKeys derives the keys cfg's components lack from cfg.Secrets, and
// fails naming the field when one is needed and the secrets cannot give it.
func fleetKeys(cfg FleetConfig) (fleetKeyset, error) {
	var ks fleetKeyset
	needed := cfg.Transport.Ledger.Store == nil && cfg.Ledger.FingerprintKeys == nil ||
		cfg.Transport.Limiter == nil && cfg.Limiter.BoundaryKey == nil ||
		cfg.Transport.Budget == nil && cfg.Budget.DestinationKey == nil
	if !needed {
		return ks, nil
	}
	if len(cfg.Secrets) == 0 {
		return ks, fmt.Errorf("%w: FleetConfig.Secrets is empty: set it to the deployment's secret, 32 random bytes (%s, base64), the same on every process", ErrInvalidConfig, secretEnv)
	}
	for i, s := range cfg.Secrets {
		if len(s) < minSecretLen {
			return ks, fmt.Errorf("%w: FleetConfig.Secrets[%d] is %d bytes: set it to 32 random bytes (%s, base64), at least %d", ErrInvalidConfig, i, len(s), secretEnv, minSecretLen)
		}
		k, err := derive(s, fingerprintKeyInfo)
		if err != nil {
			return ks, err
		}
		ks.fingerprint = append(ks.fingerprint, k)
	}
	oldest := cfg.Secrets[len(cfg.Secrets)-1]
	var err error
	if ks.boundary, err = derive(oldest, boundaryKeyInfo); err != nil {
		return ks, err
	}
	if ks.destination, err = derive(oldest, destinationKeyInfo); err != nil {
		return ks, err
	}
	return ks, nil
}

// derive returns the 32-byte key for one use (info) of a deployment
// secret: HKDF-SHA256 (RFC 5869) with no salt, as the secret is already
// uniformly random.
func derive(secret []byte, info string) ([]byte, error) {
	return hkdf.Key(sha256.New, secret, nil, info, 32)
}
