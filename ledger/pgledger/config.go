package pgledger

import (
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/retrybudget/retrybudget/ledger"
)

// DefaultTable is the table a Store uses when Config.Table is zero.
const DefaultTable = "retrybudget_ledger"

// DefaultTimeout bounds every Store call whose context has no earlier
// deadline, when Config.Timeout is zero.
const DefaultTimeout = 5 * time.Second

// Defaults of the atomic transactions' zero fields.
const (
	// DefaultAtomicWait is how long BeginAtomic waits for a free
	// transaction slot when Config.AtomicWait is zero.
	DefaultAtomicWait = time.Second
	// DefaultAtomicTimeout is an atomic transaction's deadline when
	// Config.AtomicTimeout is zero.
	DefaultAtomicTimeout = 30 * time.Second
	// reservedConns is how many of a pool's connections atomic
	// transactions leave to the store's own statements by default.
	reservedConns = 2
)

// DefaultPurgeBatch is how many expired records one Purge deletes when its
// limit is zero.
const DefaultPurgeBatch = 1000

// Config configures a Store. It requires Config.FingerprintKeys, a
// per-deployment secret held by every instance sharing the database: New
// fails with an error wrapping ledger.ErrNoFingerprintKey without it, so the
// zero value is not ready to use. Every other zero field means the default
// its comment names.
type Config struct {
	ledger.Config
	// Schema is the PostgreSQL schema holding the table. Zero means the
	// first schema of the connection's search_path. Like Table, it must be
	// a plain name.
	Schema string
	// Table names the ledger's table. Zero means DefaultTable. It must be
	// a plain name: 1 to 63 ASCII letters, digits and underscores (New
	// refuses anything else), since it is written into the statements
	// Migrate and the Store run; letter case is kept.
	Table string
	// Timeout bounds each call to the database, so a hung server or a lost
	// connection fails the call instead of holding it for ever. Zero means
	// DefaultTimeout; a context with an earlier deadline wins.
	Timeout time.Duration
	// MaxAtomic bounds the transactions BeginAtomic holds open at once,
	// one pooled connection each, so that the store's own statements
	// (Reserve, lease renewals, the writes of a Transport under the
	// handler) always find a connection instead of waiting for one that a
	// handler's transaction holds. Zero means the pool's MaxConns minus 2
	// (at least 1) when the DB is a *pgxpool.Pool, else 1; negative means
	// no bound.
	MaxAtomic int
	// MaxAtomicPerTenant bounds the transactions of MaxAtomic that one
	// tenant (ledger.Key.Tenant) holds open at once, so that one tenant's
	// slow handlers cannot take every slot and have every other tenant's
	// requests refused; a slot freed while callers wait goes to the
	// waiting tenant that holds the fewest. Zero means half of MaxAtomic's
	// bound, at least 1; negative means no per-tenant bound (one tenant
	// may take every slot). It is never more than MaxAtomic's bound, and
	// with no MaxAtomic bound there is none per tenant either.
	MaxAtomicPerTenant int
	// AtomicWait is how long BeginAtomic waits for a free slot before it
	// fails with ledger.ErrBusy. Zero means DefaultAtomicWait.
	AtomicWait time.Duration
	// AtomicTimeout is the deadline of an atomic transaction: the context
	// AtomicTx.Context returns ends AtomicTimeout after BeginAtomic, and
	// Complete after it rolls back, so one slow handler holds its
	// connection for a bounded time. Zero means DefaultAtomicTimeout.
	AtomicTimeout time.Duration
	// MaxBatch caps the statements of concurrent actions that share one
	// round trip and one commit (see docs/ledger.md): a statement made
	// while none is in flight goes at once, alone, and those made
	// meanwhile go together right after it, as one transaction. Zero
	// means ledger.DefaultMaxBatch; 1 turns sharing off, every statement
	// its own round trip and commit. Only a pool shares: on a single
	// connection or a transaction (a *pgx.Conn, a pgx.Tx) every statement
	// goes alone.
	MaxBatch int
}

func (c Config) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

func (c Config) atomicWait() time.Duration {
	if c.AtomicWait > 0 {
		return c.AtomicWait
	}
	return DefaultAtomicWait
}

func (c Config) atomicTimeout() time.Duration {
	if c.AtomicTimeout > 0 {
		return c.AtomicTimeout
	}
	return DefaultAtomicTimeout
}

// maxAtomicPerTenant returns one tenant's share of n slots.
func (c Config) maxAtomicPerTenant(n int) int {
	switch {
	case c.MaxAtomicPerTenant > 0:
		return min(c.MaxAtomicPerTenant, n)
	case c.MaxAtomicPerTenant < 0:
		return n
	}
	return max(n/2, 1)
}

// maxAtomic returns the bound on open atomic transactions for db, 0 for
// none.
func (c Config) maxAtomic(db DB) int {
	switch {
	case c.MaxAtomic > 0:
		return c.MaxAtomic
	case c.MaxAtomic < 0:
		return 0
	}
	if p, ok := db.(interface{ Stat() *pgxpool.Stat }); ok {
		return max(int(p.Stat().MaxConns())-reservedConns, 1)
	}
	return 1
}

func (c Config) table() string {
	if c.Table != "" {
		return c.Table
	}
	return DefaultTable
}

// maxNameLen is PostgreSQL's identifier length (NAMEDATALEN - 1); a longer
// name would be cut silently, and two names could then meet.
const maxNameLen = 63

// checkName returns nil when name, the value of Config field field, is a
// plain name: 1 to maxNameLen of [A-Za-z0-9_]. Quoting alone is not
// enough: a name is also written where quoting does not protect it, and a
// newline in one ended a comment of the schema and ran what followed.
func checkName(field, name string) error {
	// A name that works, for the error to show.
	good := DefaultTable
	if field == "Schema" {
		good = "public"
	}
	if name == "" || len(name) > maxNameLen {
		return fmt.Errorf("%w: pgledger.Config.%s is %d bytes, want 1 to %d, such as %q", ledger.ErrInvalidConfig, field, len(name), maxNameLen, good)
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return fmt.Errorf("%w: pgledger.Config.%s %q holds %q; want only ASCII letters, digits and underscores, such as %q", ledger.ErrInvalidConfig, field, name, c, good)
		}
	}
	return nil
}
