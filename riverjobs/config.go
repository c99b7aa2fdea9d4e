package riverjobs

import (
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/ledger"
)

// Defaults applied to the zero fields of a Config.
const (
	// DefaultMaxSnoozes is how many times a job is snoozed before a
	// further "not now" counts as a failed attempt.
	DefaultMaxSnoozes = 100
	// DefaultMaxDelay bounds how far ahead one decision puts a job's next
	// run (a snooze, or the floor of River's retry).
	DefaultMaxDelay = time.Hour
	// DefaultSnoozeSpread bounds the random time added to a snooze.
	DefaultSnoozeSpread = 250 * time.Millisecond
	// MetadataKey is the key of the job's metadata under which the
	// Middleware writes its Report.
	MetadataKey = "retrybudget"
)

// Config says how the Middleware names a job's Action and how it snoozes.
// The zero value is usable for jobs inserted with River's UniqueOpts: the
// operation is the job's kind and the key River's unique key.
type Config struct {
	// TenantField names the field of the job's args (a dot-separated path
	// into nested objects) holding the tenant. Empty means no tenant. When
	// set, a job whose args lack the field or hold it empty is cancelled
	// with ErrNoTenant: it never falls back to the tenant "".
	TenantField string
	// OperationField names the field of the job's args holding the
	// operation. Empty means the job's kind.
	OperationField string
	// KeyField names the field of the job's args identifying the business
	// action, such as "order_id". Empty means River's unique key; a job with
	// neither is cancelled with ErrNoActionKey.
	KeyField string
	// Action, when set, derives the Action itself and the three fields
	// above are ignored. It must not use the job's attempt number.
	Action func(job *rivertype.JobRow) (retrybudget.Action, error)

	// MaxSnoozes is how many snoozes a job may take (River counts them in
	// its metadata) before a further "not now" is handed to River's retry,
	// which counts an attempt. Zero means 100; a negative value never
	// snoozes.
	MaxSnoozes int
	// SnoozeSpread is the largest random time added to a snooze, so jobs
	// refused at one instant do not all come back at one instant. Zero
	// means 250ms; a negative value adds none.
	SnoozeSpread time.Duration
	// Retention is how long the Transport's ledger keeps an action's
	// record (ledger.Config.Retention, or the requests' own). A job whose
	// first run is that far back, or within a tenth of it (at most a
	// minute) of it, is held (ErrPastRetention) instead of run: the
	// records of the actions its earlier runs made may be gone, and the
	// ledger would then send them again as new. River's retries of a
	// failing job can outlast a day (its default policy waits attempt⁴
	// seconds). Zero means ledger.DefaultRetention (24h); a negative value
	// never holds for it.
	Retention time.Duration
	// MaxDelay caps how far ahead one decision puts the job's next run: a
	// snooze ends, and River's retry is floored, at most MaxDelay after the
	// run ended, whatever RetryAt a provider named (a hostile or broken
	// Retry-After may name a century). A job that comes back early is asked
	// again by the provider or held at the limiter, and snoozed again. Zero
	// means one hour; a negative value means DefaultMaxDelay too.
	MaxDelay time.Duration
}

// withDefaults returns c with every zero field replaced by its default.
func (c Config) withDefaults() Config {
	switch {
	case c.MaxSnoozes == 0:
		c.MaxSnoozes = DefaultMaxSnoozes
	case c.MaxSnoozes < 0:
		c.MaxSnoozes = 0
	}
	if c.MaxDelay <= 0 {
		c.MaxDelay = DefaultMaxDelay
	}
	if c.Retention == 0 {
		c.Retention = ledger.DefaultRetention
	}
	switch {
	case c.SnoozeSpread == 0:
		c.SnoozeSpread = DefaultSnoozeSpread
	case c.SnoozeSpread < 0:
		c.SnoozeSpread = 0
	}
	return c
}
