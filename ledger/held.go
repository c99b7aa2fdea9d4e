package ledger

import "context"

// Paging defaults of HeldQuery.
const (
	// DefaultHeldLimit is HeldQuery.Limit's zero value.
	DefaultHeldLimit = 50
	// MaxHeldLimit caps HeldQuery.Limit.
	MaxHeldLimit = 1000
	// DefaultHeldExamine is HeldQuery.Examine's zero value.
	DefaultHeldExamine = 10_000
)

// HeldLister is a Store that lists its held actions (uncertain, or in
// progress past their lease) oldest first from an index, page by page,
// instead of Sweep's scan: the Redis store, whose Sweep scans the whole
// keyspace in no set order. Memory and PostgreSQL need none: their Sweep
// is ordered and reads only stuck records. The operator console uses it
// when the store has it.
type HeldLister interface {
	Store
	// Held returns one page of held actions matching q, oldest first.
	Held(ctx context.Context, q HeldQuery) (HeldPage, error)
	// StuckInProgress returns the actions in progress past their lease
	// that the index may lack, found by a scan of at most maxKeys keys
	// per node; complete reports that it covered every key.
	StuckInProgress(ctx context.Context, maxKeys int) (stuck []Record, complete bool, err error)
}

// HeldQuery asks a HeldLister for one page.
type HeldQuery struct {
	// Tenant and Operation keep only the actions of that tenant or
	// operation. Zero means any.
	Tenant, Operation string
	// After is the previous page's HeldPage.Next. Zero means the first
	// page.
	After string
	// Limit is the most records on the page. Zero means DefaultHeldLimit
	// (50); more than MaxHeldLimit (1,000) means MaxHeldLimit.
	Limit int
	// Examine bounds the index entries one page looks at, and those its
	// counts cover: a filter matching few entries yields a short page with
	// a Next, rather than a page that reads the whole index. Zero means
	// DefaultHeldExamine (10,000).
	Examine int
}

// HeldPage is one page of held actions.
type HeldPage struct {
	// Records are the held actions of the page, oldest first (by when
	// each was first held), each read from its record, never from the
	// index alone.
	Records []Record
	// Next continues the list (HeldQuery.After). Empty on the last page.
	Next string
	// Entries is the index's size: the held actions of every tenant, and
	// entries not yet found settled (each is checked against its record
	// when listed).
	Entries int
	// Groups counts the index entries matching the query's filters per
	// tenant and operation, among the oldest HeldQuery.Examine entries
	// (Capped says when there are more).
	Groups []HeldGroup
	// Capped reports that the index holds more entries than the counts
	// looked at.
	Capped bool
}

// HeldGroup counts the held actions of one tenant and operation.
type HeldGroup struct {
	Tenant, Operation string
	// Held is the number of index entries, a count that may include
	// actions settled since they were last listed.
	Held int
}
