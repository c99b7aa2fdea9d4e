package pgledger

import (
	"fmt"
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

// Config configures a Store. The zero value is ready to use.
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

// maxNameLen is PostgreSQL's identifier length (NAMEDATALEN - 1); a longer
// name would be cut silently, and two names could then meet.
const maxNameLen = 63

// checkName returns nil when name, the value of Config field field, is a
// plain name: 1 to maxNameLen of [A-Za-z0-9_]. Quoting alone is not
// enough: a name is also written where quoting does not protect it, and a
// newline in one ended a comment of the schema and ran what followed.
func checkName(field, name string) error {
	if name == "" || len(name) > maxNameLen {
		return fmt.Errorf("%w: pgledger: Config.%s is %d bytes, want 1 to %d", ledger.ErrInvalidConfig, field, len(name), maxNameLen)
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return fmt.Errorf("%w: pgledger: Config.%s %q holds %q; want only ASCII letters, digits and underscores", ledger.ErrInvalidConfig, field, name, c)
		}
	}
	return nil
}
