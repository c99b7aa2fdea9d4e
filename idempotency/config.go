package idempotency

import (
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/ledger"
)

// Defaults of a Config's zero fields.
const (
	// DefaultKeyHeader is the request header that carries the key
	// (draft-ietf-httpapi-idempotency-key-header).
	DefaultKeyHeader = "Idempotency-Key"
	// DefaultMaxRequestBody is the largest request body the middleware
	// reads to fingerprint a request: 1 MiB.
	DefaultMaxRequestBody = 1 << 20
)

// Config configures the middleware. Every field but Tenant has a useful
// zero value: New with only Tenant set guards POST and PATCH with an
// in-process ledger.Memory.
type Config struct {
	// Store keeps one record per action. Nil means a new ledger.Memory
	// with its default caps (100,000 records, 64 MiB) and tenant quotas of
	// 1/100 of them (1,000 records), shared by every handler New's
	// middleware wraps, which deduplicates within this process only; give
	// every instance of a service one ledger.Redis to deduplicate across
	// them. Completed records are kept for their whole retention, the
	// deduplication window: a tenant at its quota gets 429 TypeLedgerFull
	// until its oldest record reaches it. The middleware must sit behind
	// authentication, so that only authenticated callers become tenants. It may be the very store the
	// service's outbound retrybudget.Transport uses (see WithStep).
	Store ledger.Store
	// Methods lists the guarded methods; requests with other methods pass
	// through untouched, key or not. Nil means POST and PATCH, the methods
	// RFC 9110 §9.2.2 does not make idempotent that carry a body; an
	// empty non-nil slice guards nothing.
	Methods []string
	// KeyHeader names the request header carrying the key. Empty means
	// DefaultKeyHeader ("Idempotency-Key").
	KeyHeader string
	// KeyOptional lets a request of a guarded method without the key
	// through to the handler, unguarded and without an action in its
	// context. False, the default, answers it 400 with TypeMissingKey, as
	// the draft allows a resource that requires keys to do (§2.7).
	KeyOptional bool
	// MaxKeyLength bounds the key, in bytes after decoding. Zero means
	// DefaultMaxKeyLength (255).
	MaxKeyLength int
	// Tenant returns the authenticated tenant of a request: the account,
	// organisation or API client the request acts for. It is required:
	// keys of two tenants never meet, and an idempotency key is not a
	// secret (a client may derive it from public parts of its action, and
	// it travels in logs and proxies), so the tenant is what keeps one
	// caller from being replayed another's stored response, or from
	// squatting another's next key. Run the middleware after
	// authentication, so that Tenant can read what the authentication
	// middleware put in the request's context.
	//
	// Nil refuses every guarded request with 500 TypeNoTenant: there is no
	// default that could merge callers (one derived from the Authorization
	// header would put every caller identified by an API-key header, a
	// cookie or nothing at all into one shared tenant). A request for which
	// Tenant returns "" is refused with 403 TypeNoTenant and the handler
	// does not run. CredentialTenant builds a Tenant from a credential
	// header for services without accounts.
	Tenant func(*http.Request) string
	// Operation names what a request does; with the tenant and the key it
	// forms the action's identity (ledger.Key). Nil means the route that
	// http.ServeMux matched: r.Pattern, prefixed with the method when the
	// pattern has none ("POST /api/v1/campaign-activations"). r.Pattern is
	// set only for a handler the ServeMux calls, so wrap each route, not
	// the mux; when it is empty the operation is the method and the
	// escaped URL path, which scopes keys per resource instead of per
	// route. An operation must not contain StepSeparator, which marks
	// derived actions.
	Operation func(*http.Request) string
	// FingerprintHeaders names the request headers that count in the
	// fingerprint, beside the method, path, query and body (see
	// ledger.Fingerprint). Nil means none. Authorization, Proxy-
	// Authorization and Cookie never count.
	FingerprintHeaders []string
	// Retention is how long an action's record lives from its creation.
	// After it the key runs as a new action: the handler runs again,
	// nothing is replayed, and a different request under the key is not a
	// conflict. Zero means the store's ledger.Config.Retention (24 hours
	// by default). Keep it at least as long as clients retry.
	//
	// The record's real lifetime is the later of Retention from creation
	// and one Lease past the end of its last lease (the store keeps a
	// record that long so that a server that died holding it is seen as
	// stuck, not as absent): a request that ran for d lives at least
	// d + 2*Lease. With Lease 10s, Retention 1s and a quick handler, a key
	// is still answered at 3 s and runs as new from about 20 s.
	Retention time.Duration
	// Lease is how long a running request holds its action before other
	// requests treat its server as dead. The middleware renews it every
	// third of its length while the handler runs, so it bounds only how
	// long a crash goes unnoticed. Zero means ledger.DefaultLease (30s),
	// whatever the store's own Config.Lease says.
	//
	// After a server died mid-request, its action is answered 409
	// TypePending, without running the handler, until the longer of two
	// leases has run out since that server's last renewal: this Lease, and
	// the outbound Transport's (retrybudget.LedgerConfig.Lease) on a step
	// the dead handler derived with WithStep. A request that takes the
	// action over when the inbound lease ends, while the step is still
	// held, finds the step pending; its handler's failure is then dropped,
	// the action stays held by that request until the step's lease ends,
	// and the client is told to come back then (Retry-After).
	Lease time.Duration
	// MaxRequestBody bounds the request body, which is read whole before
	// the handler runs to fingerprint it; a longer one is answered 413
	// with TypeBodyTooLarge. Zero means DefaultMaxRequestBody (1 MiB).
	MaxRequestBody int64
	// MaxResponseBody is the largest response body held back and stored
	// for replay. A longer body is streamed to the client as it is
	// written and stored only as its SHA-256 and length, and a replay
	// answers without it (see the package documentation). Zero means
	// ledger.DefaultMaxBody (64 KiB); negative means never store a body.
	// A store whose ledger.Config.MaxBody is smaller keeps only the hash
	// of bodies between the two.
	MaxResponseBody int
	// RerunUncertain runs the handler again for an action whose outcome is
	// uncertain (its server died mid-request, or the handler called
	// MarkEffect and then failed), instead of answering TypeUncertain. Set
	// it only when every effect of the handler is itself deduplicated
	// under the action, for example every outbound call goes through a
	// retrybudget.Transport with the action from WithStep and a provider
	// that honours keys, and every local write is keyed by the action.
	// False, the default, never runs a handler whose effect may have
	// happened.
	RerunUncertain bool
	// Atomic runs the handler inside a transaction of the store, which
	// must implement ledger.Atomic (the PostgreSQL store does), and
	// completes the action's record in that same transaction: the handler
	// takes the transaction from its request's context (pgledger.Tx) and
	// does every effect through it. A crash, a lost connection or a failed
	// commit then leaves the effect and the record both applied or both
	// not, so a retry either replays the stored response or runs the
	// handler again, never both. An effect outside the transaction is
	// marked first with MarkEffect, which then writes to the store. See
	// the package documentation.
	Atomic bool
	// Owner names this server in ledger records, for operators. Empty
	// means "hostname:pid".
	Owner string
	// Now reads the clock that the leases of the store's records are
	// compared with, when the middleware waits for a step another server
	// holds (see Lease). Nil means time.Now; tests pass the store's fake
	// clock. Clock skew against the store only shifts the Retry-After
	// of that answer.
	Now func() time.Time
	// Logger receives ledger failures met after the handler ran, when
	// the response can no longer say so. Nil means silent.
	Logger *slog.Logger
	// PendingRetryAfter is the Retry-After of a 409 TypePending for an
	// operation that has not yet run to its end in this process. Once it
	// has, the answer says what is left of how long it usually takes
	// (a moving average of the tenant's own runs of it, or of every
	// tenant's while the tenant has none), so a duplicate comes back about
	// when the first request's response is ready rather than when its
	// owner's lease ends, and another tenant's slow runs do not set it.
	// Either way it is at least one second and never past the lease. Zero
	// means one second.
	PendingRetryAfter time.Duration
	// Identities says how Logger's records name an action: by
	// Identities.ActionID, the rule slogretry's Observer follows,
	// so one ActionKey matches inbound and outbound logs. The zero value
	// leaves the action's name out.
	Identities retrybudget.Identities
}

// defaultTenantShare is how many tenants at their quota it takes to fill
// the default store.
const defaultTenantShare = 100

// settings is a Config with defaults applied.
type settings struct {
	Config
	methods map[string]bool
	// typical is how long each operation's handler usually runs, shared
	// by every handler New's middleware wraps.
	typical *typical
}

// withDefaults returns c with every zero field replaced by its default.
func (c Config) withDefaults() settings {
	if c.Store == nil {
		// Keys come from callers: give none of them more than 1/100 of
		// the store, so a handful of tenants (or one caller holding a few
		// credentials, with CredentialTenant) cannot fill it for everyone.
		c.Store = ledger.NewMemory(ledger.MemoryConfig{
			TenantMaxRecords: ledger.DefaultMaxRecords / defaultTenantShare,
			TenantMaxBytes:   ledger.DefaultMaxBytes / defaultTenantShare,
		})
	}
	if c.Methods == nil {
		c.Methods = []string{http.MethodPost, http.MethodPatch}
	}
	s := settings{methods: make(map[string]bool, len(c.Methods)), typical: &typical{}}
	for _, m := range c.Methods {
		s.methods[strings.ToUpper(m)] = true
	}
	if c.KeyHeader == "" {
		c.KeyHeader = DefaultKeyHeader
	}
	if c.MaxKeyLength <= 0 {
		c.MaxKeyLength = DefaultMaxKeyLength
	}
	if c.Operation == nil {
		c.Operation = routeOperation
	}
	if c.Lease <= 0 {
		c.Lease = ledger.DefaultLease
	}
	if c.PendingRetryAfter <= 0 {
		c.PendingRetryAfter = minPendingWait
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.MaxRequestBody <= 0 {
		c.MaxRequestBody = DefaultMaxRequestBody
	}
	switch {
	case c.MaxResponseBody == 0:
		c.MaxResponseBody = ledger.DefaultMaxBody
	case c.MaxResponseBody < 0:
		c.MaxResponseBody = -1
	}
	if c.Owner == "" {
		host, _ := os.Hostname()
		c.Owner = host + ":" + strconv.Itoa(os.Getpid())
	}
	s.Config = c
	return s
}

// routeOperation is the default Operation: the ServeMux pattern with its
// method, or the method and path when no pattern matched.
func routeOperation(r *http.Request) string {
	p := r.Pattern
	if p == "" {
		return r.Method + " " + r.URL.EscapedPath()
	}
	// A pattern is "[METHOD ][HOST]/[PATH]": a method, when present, is
	// the part before the first space (net/http ServeMux patterns).
	if i := strings.IndexAny(p, " \t"); i > 0 && !strings.Contains(p[:i], "/") {
		return p
	}
	return r.Method + " " + p
}
