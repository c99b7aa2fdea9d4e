package retrybudget

import (
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/retrybudget/retrybudget/budget"
	"github.com/retrybudget/retrybudget/internal/schedule"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/limiter"
)

// Defaults applied to the zero fields of a Config.
const (
	DefaultKeyHeader     = "Idempotency-Key"
	DefaultMaxAttempts   = schedule.DefaultMaxAttempts
	DefaultBaseDelay     = schedule.DefaultBaseDelay
	DefaultMaxDelay      = schedule.DefaultMaxDelay
	DefaultJitter        = schedule.DefaultJitter
	DefaultMaxWait       = schedule.DefaultMaxWait
	DefaultMaxBodyBuffer = 1 << 20
	DefaultMaxDrain      = 64 << 10
)

// Config configures a Transport. The zero value is ready to use: every zero
// field means the documented default, so New(Config{}) is a safe transport.
type Config struct {
	// Base sends each attempt. Nil means http.DefaultTransport.
	Base http.RoundTripper

	// KeyHeader is the request header that carries the idempotency key,
	// such as "PayPal-Request-Id". Empty means "Idempotency-Key".
	KeyHeader string
	// KeysHonoured declares that the provider deduplicates requests by
	// KeyHeader, so a request with a generated key is safe to repeat even
	// when it may have been applied. False (the default) retries a
	// generated-key request only when it cannot have been applied. An
	// Action's key counts as honoured unless OmitKey is set; a caller-set
	// key too, and under OmitKey only when KeysHonoured is true.
	KeysHonoured bool
	// OmitKey sends no key header of the Transport's own, for providers
	// that document none: no generated key, and an Action's key only in
	// place of a key the caller or an SDK already put in the header. The
	// provider is then presumed to ignore keys: neither an Action nor a
	// key the caller or an SDK set makes a request repeatable, unless
	// KeysHonoured declares that this provider honours the caller's.
	// False (the default) sends a key with every call that has one.
	OmitKey bool
	// KeyRetention is how long the provider keeps a key once the action
	// it names was first reserved, when it documents a window, such as
	// PayPal's 6 hours for Orders: past it, a key is new work to the
	// provider, so the ledger never re-sends an action older than this
	// under its key; it reports it as ErrUncertain for an operator
	// instead. Zero means the provider keeps keys at least as long as the
	// ledger keeps records.
	KeyRetention time.Duration
	// SettleTime is how long after a send the provider may still apply
	// it: at least its processing time, counted from the action's last
	// sending mark or attempt on the ledger store's clock (see
	// ledger.ReserveRequest.Settle). A request cut off by a crash or a
	// timeout may be applied seconds after its client is gone, so until
	// the settle time has passed a Reconciler's "not found" for an action
	// that may have been sent is not trusted where keys are not honoured:
	// the action stays uncertain, and the call ends with ErrPending and
	// RetryAt at the settle time's end. A found effect is replayed at
	// once. Zero means Ledger.Lease; it never means "forever". Set it
	// shorter only where the provider documents how long it may take.
	SettleTime time.Duration

	// MaxAttempts limits the attempts per call, the first included. Zero
	// means 4; a negative value means 1 (no retries).
	MaxAttempts int
	// BaseDelay is the backoff before the first retry; each later retry
	// doubles it. Zero means 200ms.
	BaseDelay time.Duration
	// MaxDelay caps a backoff delay, jitter included. It never shortens a
	// provider's Retry-After. Zero means 30s.
	MaxDelay time.Duration
	// Jitter is the randomization factor of backoff delays, in [0, 1]: a
	// delay d becomes a uniform pick in [d×(1−Jitter), d×(1+Jitter)].
	// Zero means 0.5; a negative value disables jitter.
	Jitter float64
	// MaxWait is the longest a call waits in all, backoff, Retry-After
	// and limiter waits together, deadline or not. A wait that would go
	// past it ends the call at once with ErrWaitTooLong and the time to
	// come back in Outcome.RetryAt (the provider's, when it named one).
	// Zero means 60s.
	MaxWait time.Duration
	// Deadline bounds a whole call, every attempt and wait included, on
	// top of the request context's deadline. Zero means no bound beyond
	// the context.
	Deadline time.Duration
	// AttemptTimeout bounds one attempt, up to the response headers and
	// while its body is read; it shrinks to the time left before the
	// deadline. Zero means no per-attempt bound.
	AttemptTimeout time.Duration

	// HedgeDelay, when positive, hedges the first attempt of an idempotent
	// call (GET, HEAD, OPTIONS and TRACE; PUT and DELETE with HedgeWrites):
	// when it has no answer after HedgeDelay, one more copy is sent, the
	// first answer is taken and the other copy cancelled. A hedge is an
	// attempt like a retry: it spends the retry Budget, waits on the
	// Limiter and counts against MaxAttempts. None is sent for a call that
	// sends a key or has a ledger record, nor unless the destination's last
	// attempt got an answer (see docs/hedging.md). With HedgePercentile
	// set, it is the least delay. Zero means no hedging unless
	// HedgePercentile is set.
	HedgeDelay time.Duration
	// HedgePercentile, in (0, 100), hedges after that percentile of the
	// latencies the Transport has seen at the request's destination (95:
	// only the slowest 5 % or so are hedged), once it has seen 32 of them;
	// HedgeDelay, when set, is a floor under it. Zero, or a value outside
	// (0, 100), means the fixed HedgeDelay alone.
	HedgePercentile float64
	// HedgeWrites extends hedging to PUT and DELETE, idempotent by RFC 9110
	// §9.2.2 but not safe: set it only where the provider keeps that
	// promise. False hedges GET, HEAD, OPTIONS and TRACE only.
	HedgeWrites bool

	// MaxBodyBuffer is the largest request body without GetBody that the
	// Transport buffers to make it replayable. A larger one is sent once
	// and never retried (ErrBodyNotReplayable). Zero means 1 MiB; a
	// negative value never buffers.
	MaxBodyBuffer int64
	// MaxDrain is how much of a response that will be retried is read
	// before closing it, so its connection can be reused; the rest is
	// dropped with the connection, as is a body still unread after 100ms.
	// Zero means 64 KiB.
	MaxDrain int64

	// Budget bounds retries to a fraction of traffic per destination.
	// Nil means a budget.Local with the default budget.Config (10% of
	// first attempts, or 10 retries per second, over 10s) for this
	// Transport; budget.Unlimited{} turns the bound off.
	Budget budget.Budget
	// Destination names the destination a request counts against in the
	// Budget and the Throttle. Nil means the request's URL host.
	Destination func(*http.Request) string
	// Throttle, when set, rejects a share of new calls locally while the
	// provider accepts far fewer attempts than are sent. Nil means off.
	Throttle *budget.Throttle
	// Overload refuses at once, per destination, a new call that the
	// provider's queue could not answer in time: while most recent
	// attempts to the destination ran out of time (AttemptTimeout or the
	// deadline), a call whose attempt may wait no longer than those did
	// ends with ErrThrottled before it is sent (see budget.Overload).
	// Nil means a budget.NewOverload(budget.OverloadConfig{}) for this
	// Transport; one made with OverloadConfig.Disable turns it off.
	Overload *budget.Overload

	// Limiter, when set, is waited on before every attempt, first
	// attempts and retries alike, and is told to pause a boundary when the
	// provider answers 429 or 503 with Retry-After. Nil means no limit.
	Limiter limiter.Limiter
	// Boundary maps a request to the limiter boundary it counts against
	// (see limiter.ByCredential). Nil means the request's URL host.
	Boundary limiter.Boundary

	// Ledger gives every call made under an Action one durable record
	// when its Store is set (see package ledger): a repeated action is
	// replayed, held or rejected, never sent twice. The zero value means
	// no ledger.
	Ledger LedgerConfig

	// Classifier decides each attempt's Class. Nil means
	// DefaultClassifier.
	Classifier Classifier
	// Routes give requests to some destinations their own policy; the
	// rest use this Config. Nil means one policy for every destination.
	Routes []Route
	// Observer receives attempt, retry and give-up events. Its nil
	// fields are skipped; the zero value observes nothing.
	Observer Observer
}

// LedgerConfig configures the action ledger of a Transport (Config.Ledger).
// The zero value is no ledger.
type LedgerConfig struct {
	// Store keeps one record per action: ledger.NewMemory in one process,
	// ledger.NewRedis for a fleet. Nil means no ledger.
	Store ledger.Store
	// Headers names the request headers that count in an action's
	// fingerprint, beside the method, path, query and body. Nil means none.
	Headers []string
	// Owner names this worker in ledger records. Set it to a name that
	// is stable across restarts and unique among live workers, such as
	// a Kubernetes pod name (the Downward API's metadata.name): a worker
	// that restarts under the same Owner then takes over the actions its
	// earlier run left in progress at once (see
	// ledger.ReserveRequest.Instance), instead of waiting out their
	// leases, and each is then run, reconciled, re-sent or reported
	// uncertain as ledger.Resolve decides for a dead owner: only what was
	// never marked as sending is sent at once where keys are not honoured;
	// a Reconciler's "not found" for the rest waits out the settle time
	// of its last send (Config.SettleTime). Two live workers given one
	// Owner take each other's actions over: fencing still keeps every
	// action to one sender, since every send, a retry included, is fenced
	// by a sending mark with the call's token, and the one that loses
	// reports ledger.ErrOwnerShared to Observer.Ledger. Empty means
	// "hostname:pid", which changes on restart, so a restarted worker
	// waits out its old leases.
	Owner string
	// instance is this process's run (ledger.ReserveRequest.Instance),
	// set by withDefaults when Owner was given; empty with the default
	// Owner, whose reclaim it would not make safe: containers of one pod
	// share the hostname, and each may run as pid 1.
	instance string
	// Lease is how long a call holds its action before others may take it
	// over; a running call renews it every third of it (ledger.KeepLease).
	// Zero means ledger.DefaultLease (30s).
	Lease time.Duration
	// calls is how long the owning calls of each tenant and operation
	// usually run, for the RetryAt of a duplicate told ErrPending; set by
	// withDefaults, shared by the copies of this policy's Config.
	calls *callTimes
	// Reconciler asks the provider what became of an action whose owner
	// died mid-call (typically a GET by idempotency key). Nil means such an
	// action is re-sent under the same key when Config.KeysHonoured, and
	// otherwise reported as ErrUncertain for an operator. Its context ends
	// at the call's deadline, and after 5s at most, as a store call's does;
	// a Reconciler that fails or runs out of time leaves the action
	// uncertain. For the record of a redirect hop, the Record's Key is the
	// action the hop derives from, whose request the hop carries (see
	// docs/ledger.md, "Redirects").
	Reconciler ledger.Reconciler
}

// withDefaults returns c with every zero field replaced by its default; the
// components it builds by default (the Budget) read the time from clk.
func (c Config) withDefaults(clk clock) Config {
	if c.Base == nil {
		c.Base = http.DefaultTransport
	}
	if c.KeyHeader == "" {
		c.KeyHeader = DefaultKeyHeader
	}
	c.KeyHeader = http.CanonicalHeaderKey(c.KeyHeader)
	s := c.schedule().WithDefaults()
	c.MaxAttempts, c.BaseDelay, c.MaxDelay, c.Jitter, c.MaxWait = s.MaxAttempts, s.BaseDelay, s.MaxDelay, s.Jitter, s.MaxWait
	if c.MaxBodyBuffer == 0 {
		c.MaxBodyBuffer = DefaultMaxBodyBuffer
	}
	if c.MaxDrain <= 0 {
		c.MaxDrain = DefaultMaxDrain
	}
	if c.Budget == nil {
		c.Budget = budget.NewLocalClock(budget.Config{}, spanNow(clk))
	}
	if c.Overload == nil {
		c.Overload = budget.NewOverload(budget.OverloadConfig{})
	}
	if c.Destination == nil {
		c.Destination = hostOf
	}
	if c.Boundary == nil {
		c.Boundary = hostOf
	}
	if c.Ledger.Store != nil {
		if c.Ledger.Owner == "" {
			c.Ledger.Owner = defaultLedgerOwner()
		}
		// The default name, given or inherited by a Route, reclaims
		// nothing (see instance).
		if c.Ledger.instance == "" && c.Ledger.Owner != defaultLedgerOwner() {
			c.Ledger.instance = processInstance()
		}
		if c.Ledger.calls == nil {
			c.Ledger.calls = &callTimes{}
		}
	}
	if c.Ledger.Lease <= 0 {
		c.Ledger.Lease = ledger.DefaultLease
	}
	if c.Classifier == nil {
		c.Classifier = DefaultClassifier{KeyHeader: c.KeyHeader}
	}
	return c
}

// schedule returns the retry schedule c configures; the planner (package
// plan) reads the same one from its Policy.
func (c *Config) schedule() schedule.Schedule {
	return schedule.Schedule{MaxAttempts: c.MaxAttempts, BaseDelay: c.BaseDelay, MaxDelay: c.MaxDelay,
		Jitter: c.Jitter, MaxWait: c.MaxWait, Deadline: c.Deadline}
}

// hostOf is the default Destination: the request's URL host.
func hostOf(r *http.Request) string { return r.URL.Host }

// defaultLedgerOwner names this process in ledger records.
func defaultLedgerOwner() string {
	host, _ := os.Hostname()
	return host + ":" + strconv.Itoa(os.Getpid())
}

// processInstance identifies this run of the process in ledger records
// (ledger.ReserveRequest.Instance): drawn once, at the first use, and the
// same for every Transport of the process, so Transports of one process
// never take each other's actions over as if it had restarted.
var processInstance = sync.OnceValue(ledger.NewNonce)
