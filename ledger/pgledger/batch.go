package pgledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/retrybudget/retrybudget/internal/groupcommit"
	"github.com/retrybudget/retrybudget/ledger"
)

// The statements of concurrent actions share round trips and commits: the
// first goes at once, alone, and those that arrive while it is in flight
// go together right after it, as one pipeline (a pgx.Batch: one round
// trip) that PostgreSQL runs as one implicit transaction with one commit
// (a group commit; see internal/groupcommit).
//
// One statement's error aborts a transaction, so none of them raises for
// an action's own reasons: a stale token, a record that moved on, a
// reservation that writes nothing all come back as rows (RETURNING) or
// row counts, each read by its own call. Should the server still answer
// the batch with an error (a value it refuses, say), the whole batch was
// rolled back, and each of its calls runs again as a statement of its own,
// on its caller's goroutine and outside the batches, so that the error
// reaches only its own call. A batch locks its rows in one order (by
// action ID), so two batches never wait for each other in a cycle. A
// commit whose answer is lost (a cut connection, a timeout) may or may not
// have happened: every call of the batch gets the error a lone statement's
// lost answer gives, "maybe written".
//
// While one round trip is in flight the others wait, so none may wait
// long for a row lock that another transaction holds (an atomic
// transaction of this Store or of another process, one whose commit's
// answer was lost and which the server keeps open): every round trip,
// the lone one too, runs under a lock_timeout of lockWait, and a
// statement that meets it (the batch is rolled back) runs again outside
// the batches, where it waits for the lock within its caller's own bound
// and holds no other action. Rows an open atomic transaction of this
// Store holds (BeginAtomic until Complete or Rollback) stay out of
// batches from the start.
//
// In a transaction now() is the transaction's start, so the batch forms of
// the statements read statement_timestamp(), each statement's own start,
// as a statement run alone reads now(): one decision sees one instant.

// lockWait bounds how long a round trip of the batcher waits for a row
// lock: rows are locked only for a statement's or a short transaction's
// time, so a lock held longer is one that would hold every caller queued
// behind the round trip.
const lockWait = 100 * time.Millisecond

// lockWaitSQL sets lockWait for the round trip's implicit transaction only.
var lockWaitSQL = fmt.Sprintf("SELECT set_config('lock_timeout', '%dms', true)", lockWait.Milliseconds())

// errAlone marks a call whose round trip the server rolled back: it runs
// again as a statement of its own, on its caller's goroutine.
var errAlone = errors.New("pgledger: the batch was rolled back; run the statement alone")

// batchSender is what batching needs of the DB: *pgxpool.Pool has it.
type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// stmtCall is one statement carried by a batch, and its result.
type stmtCall struct {
	id    string // the action's ID: batches lock rows in this order
	sql   string // the statement as written (run alone)
	batch string // its batch form (statement_timestamp())
	args  []any
	query bool // QueryRow: at most one row; else Exec

	// The result, written by the batch.
	tag    pgconn.CommandTag
	found  bool
	fields []pgconn.FieldDescription
	values [][]byte
	err    error
}

// batcher shares round trips between a Store's statements.
type batcher struct {
	db     DB
	sender batchSender
	calls  *groupcommit.Batcher[*stmtCall]
	// forms maps each statement the store batches to its batch form;
	// immutable.
	forms map[string]string

	// mu guards types and held.
	mu sync.Mutex
	// types decodes the rows a batch brought back. Scanning with it is
	// not safe for concurrent use, hence mu.
	types *pgtype.Map
	// held counts, per action ID, the open atomic transactions of this
	// Store on the row; at most one per slot (Config.MaxAtomic) and never
	// more than the pool's connections.
	held map[string]int
}

// newBatcher returns the batcher of a Store whose statements are queries,
// or nil when batching is off (maxBatch 1) or db runs no batches of its
// own (a single connection or a transaction: statements on one session
// cannot run side by side anyway).
func newBatcher(db DB, maxBatch int, queries map[string]string) *batcher {
	sender, ok := db.(batchSender)
	switch db.(type) {
	case *pgx.Conn, pgx.Tx:
		ok = false
	}
	if !ok || maxBatch == 1 {
		return nil
	}
	if maxBatch <= 0 {
		maxBatch = ledger.DefaultMaxBatch
	}
	b := &batcher{db: db, sender: sender, forms: map[string]string{}, types: pgtype.NewMap(), held: map[string]int{}}
	for _, name := range []string{"create", "takeover", "read", "renew", "attempt", "complete", "fail", "markSending"} {
		q := queries[name]
		b.forms[q] = strings.ReplaceAll(q, "now()", "statement_timestamp()")
	}
	b.calls = groupcommit.New(maxBatch, 0, b.run)
	return b
}

// on returns what the statements on the row of action id run through: the
// batcher, or db itself when batching is off or an open atomic
// transaction holds the row.
func (s *Store) on(id string) DB {
	b := s.batch
	if b == nil {
		return s.db
	}
	b.mu.Lock()
	held := b.held[id] > 0
	b.mu.Unlock()
	if held {
		return s.db
	}
	return rowDB{DB: s.db, b: b, id: id}
}

// hold keeps id's row out of batches until the returned function is
// called (once).
func (b *batcher) hold(id string) func() {
	if b == nil {
		return func() {}
	}
	b.mu.Lock()
	b.held[id]++
	b.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			if b.held[id]--; b.held[id] <= 0 {
				delete(b.held, id)
			}
		})
	}
}

// rowDB runs the statements on one action's row through the batcher;
// everything else goes to the DB.
type rowDB struct {
	DB
	b  *batcher
	id string
}

// Exec runs sql in the next batch, or at once when none is in flight.
func (r rowDB) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	form, ok := r.b.forms[sql]
	if !ok {
		return r.DB.Exec(ctx, sql, args...)
	}
	c := &stmtCall{id: r.id, sql: sql, batch: form, args: args}
	if err := r.b.do(ctx, c); err != nil {
		return pgconn.CommandTag{}, err
	}
	if c.err == errAlone {
		return r.DB.Exec(ctx, sql, args...)
	}
	return c.tag, c.err
}

// do runs c in the next batch, or at once, alone, when none is in flight;
// either way under lockWait.
func (b *batcher) do(ctx context.Context, c *stmtCall) error {
	return b.calls.Do(ctx, c, func(ctx context.Context) { b.run(ctx, []*stmtCall{c}) })
}

// QueryRow runs sql in the next batch, or at once when none is in flight.
func (r rowDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	form, ok := r.b.forms[sql]
	if !ok {
		return r.DB.QueryRow(ctx, sql, args...)
	}
	c := &stmtCall{id: r.id, sql: sql, batch: form, args: args, query: true}
	if err := r.b.do(ctx, c); err != nil {
		return errRow{err}
	}
	if c.err == errAlone {
		return r.DB.QueryRow(ctx, sql, args...)
	}
	return batchRow{c: c, b: r.b}
}

// errRow is a row whose Scan fails with err.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// batchRow is one call's row, as a batch brought it back.
type batchRow struct {
	c *stmtCall
	b *batcher
}

// Scan decodes the row into dest, or returns the call's error, or
// pgx.ErrNoRows.
func (r batchRow) Scan(dest ...any) error {
	switch {
	case r.c.err != nil:
		return r.c.err
	case !r.c.found:
		return pgx.ErrNoRows
	}
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	return pgx.ScanRow(r.b.types, r.c.fields, r.c.values, dest...)
}

// run makes one batch's round trip: lockWait, then its statements in
// action-ID order, one implicit transaction, one commit.
func (b *batcher) run(ctx context.Context, calls []*stmtCall) {
	calls = slices.Clone(calls)
	slices.SortStableFunc(calls, func(x, y *stmtCall) int { return strings.Compare(x.id, y.id) })
	batch := &pgx.Batch{}
	batch.Queue(lockWaitSQL)
	for _, c := range calls {
		batch.Queue(c.batch, c.args...)
	}
	br := b.sender.SendBatch(ctx, batch)
	_, err := br.Exec()
	for _, c := range calls {
		if err != nil {
			break
		}
		err = c.read(br)
	}
	// Close reads the commit's answer: until then no result stands.
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		return
	}
	pgErr, unsent := (*pgconn.PgError)(nil), pgx.ErrPreprocessingBatch{}
	if errors.As(err, &pgErr) || errors.As(err, &unsent) {
		// The server answered and rolled the whole batch back, or pgx
		// could not build it (an argument it cannot encode) and sent
		// none of it: nothing of it was written. Each call runs again
		// alone, for its own result, on its caller's goroutine: one of
		// them may wait for a lock (lockWait) and must not hold the
		// others.
		for _, c := range calls {
			*c = stmtCall{sql: c.sql, args: c.args, query: c.query, err: errAlone}
		}
		return
	}
	for _, c := range calls {
		*c = stmtCall{err: err}
	}
}

// read reads c's result from br.
func (c *stmtCall) read(br interface {
	Exec() (pgconn.CommandTag, error)
	Query() (pgx.Rows, error)
}) error {
	if !c.query {
		var err error
		c.tag, err = br.Exec()
		return err
	}
	rows, err := br.Query()
	if err != nil {
		return err
	}
	return c.readRows(rows)
}

// readRows keeps the first row of rows, copied: the connection reuses
// its buffers.
func (c *stmtCall) readRows(rows pgx.Rows) error {
	if rows.Next() {
		c.found = true
		c.fields = slices.Clone(rows.FieldDescriptions())
		raw := rows.RawValues()
		c.values = make([][]byte, len(raw))
		for i, v := range raw {
			if v != nil {
				c.values[i] = slices.Clone(v)
			}
		}
	}
	rows.Close()
	return rows.Err()
}

// sharedStatements returns how many statements went in a shared round
// trip, and in how many such round trips, for tests; zero without
// batching.
func (s *Store) sharedStatements() (calls, batches int64) {
	if s.batch == nil {
		return 0, 0
	}
	return s.batch.calls.Shared()
}
