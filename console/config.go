package console

import (
	"net/http"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// Config configures the console. Store and one of Token or Authenticate
// are required: New refuses a Config without them.
type Config struct {
	// Store is the ledger the console reads and settles. Required.
	Store ledger.Store
	// Token is the operator token. A browser signs in with it once on the
	// login page and then holds a session cookie derived from it; a script
	// may send it as "Authorization: Bearer <token>". It is compared in
	// constant time. Zero means none; then Authenticate is required.
	Token string
	// Authenticate, when set, identifies the operator of each request
	// instead of Token, such as from a header an authenticating proxy
	// sets. An error refuses the request with 401. Nil means Token.
	Authenticate func(*http.Request) (Operator, error)
	// ReadOnly hides the settle form and refuses every change with 403.
	// Zero means operators may settle actions.
	ReadOnly bool
	// Tenants, when not nil, limits every operator to these tenants
	// (Key.Tenant), on top of Operator.Tenants. Nil means no limit.
	Tenants []string
	// PageSize is how many actions one page of the held list shows. Zero
	// means 50.
	PageSize int
	// MaxScan bounds the records one page reads from the store (Sweep
	// reads one more, to tell whether there are more), so a big store
	// cannot stall the console; the page says when the bound was reached.
	// Zero means 10,000.
	MaxScan int
	// Lease is the ledger's lease (ledger.Config.Lease), for records
	// without Record.SettleUntil (written before stores kept it): settling
	// such an action as not applied is refused until its last attempt is
	// at least this old. Zero means ledger.DefaultLease.
	Lease time.Duration
	// Timeout bounds one request's work against the store. Zero means 10
	// seconds.
	Timeout time.Duration
	// Refresh, when positive, makes the held list reload itself this
	// often (a <meta http-equiv="refresh">), and the Destinations pages
	// too. Zero means the held list never reloads itself and the
	// Destinations pages every 5 seconds.
	Refresh time.Duration
	// Metrics, when set, adds the Destinations pages: per destination,
	// charts of what the Transports that Metrics observes did. Nil means
	// no Destinations pages.
	Metrics *Metrics
}

// Operator is who is using the console, as Config.Authenticate reports.
type Operator struct {
	// Name is written, with the time, into the reason stored with an
	// action the operator settles. Empty means the operator is asked for
	// a name on the settle form (the shared Token names nobody).
	Name string
	// Tenants, when not nil, limits the operator to these tenants. Nil
	// means every tenant Config.Tenants allows.
	Tenants []string
}

const (
	defaultPageSize = 50
	defaultMaxScan  = 10_000
	defaultTimeout  = 10 * time.Second
)
