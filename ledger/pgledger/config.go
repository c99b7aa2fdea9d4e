package pgledger

import (
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// DefaultTable is the table a Store uses when Config.Table is zero.
const DefaultTable = "retrybudget_ledger"

// DefaultTimeout bounds every Store call whose context has no earlier
// deadline, when Config.Timeout is zero.
const DefaultTimeout = 5 * time.Second

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
	// first schema of the connection's search_path.
	Schema string
	// Table names the ledger's table. Zero means DefaultTable.
	Table string
	// Timeout bounds each call to the database, so a hung server or a lost
	// connection fails the call instead of holding it for ever. Zero means
	// DefaultTimeout; a context with an earlier deadline wins.
	Timeout time.Duration
}

func (c Config) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

func (c Config) table() string {
	if c.Table != "" {
		return c.Table
	}
	return DefaultTable
}
