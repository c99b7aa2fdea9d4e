package pgledger

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/ledgertest"
	"github.com/retrybudget/retrybudget/ledger/pgledger/pgtest"
)

// statementCostEnv turns TestStatementCost on: it prints figures and takes
// a minute, so it is not part of the package's tests.
const statementCostEnv = "PGLEDGER_STATEMENT_COST"

// TestStatementCost prices the batched statements' shapes by the server
// backend's own CPU per row (/proc/<pid>/stat), each variant over as many
// rows on one connection, in batches of batchRows as the batcher sends
// them, alternated over four rounds:
//
//   - the creation (createSQL) of a new action against the same creation
//     carrying the takeover as its ON CONFLICT DO UPDATE (one statement
//     for both, the form before createSQL), and against a bare INSERT of
//     the same row: what the reservation's own logic costs;
//
//   - the outcome (completeSQL) one statement per row, as the batcher sends
//     it, against the same outcomes as one statement for the whole batch
//     (its parameters as arrays, unnest), and against an UPDATE of one
//     column: whether per-statement costs or the row's own work dominate.
//
// Run it with
//
//	PGLEDGER_STATEMENT_COST=1 go test -run TestStatementCost -v
func TestStatementCost(t *testing.T) {
	if os.Getenv(statementCostEnv) == "" {
		t.Skipf("set %s=1 to price the statements", statementCostEnv)
	}
	const rows, batchRows, rounds = 5600, 14, 4
	ctx := t.Context()
	pool := pgtest.Pool(t)
	s, err := New(pool, Config{MaxBatch: 1, Config: ledger.Config{FingerprintKeys: ledgertest.FingerprintKeys()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var pid int
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := backendCPU(pid); err != nil {
		t.Skipf("the server's processes are not readable here (%v): run it against a local server", err)
	}
	// price runs each batch of n statements (or rows) that queue makes,
	// and returns the backend's CPU per row.
	price := func(n int, queue func(b *pgx.Batch, from int)) time.Duration {
		before, err := backendCPU(pid)
		if err != nil {
			t.Fatal(err)
		}
		for from := 0; from < n; from += batchRows {
			b := &pgx.Batch{}
			queue(b, from)
			if err := conn.SendBatch(ctx, b).Close(); err != nil {
				t.Fatal(err)
			}
		}
		after, err := backendCPU(pid)
		if err != nil {
			t.Fatal(err)
		}
		return (after - before) / time.Duration(n)
	}
	count := func(q string) (n int) {
		if err := conn.QueryRow(ctx, q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	batchForm := func(q string) string { return strings.ReplaceAll(q, "now()", "statement_timestamp()") }

	// Creations: new keys each round, the store's statement against a bare
	// INSERT of the same columns.
	create := batchForm(s.queries["create"])
	bare := `INSERT INTO retrybudget_ledger (id, tenant, operation, action_key, fingerprint, state, owner, token,
  lease_until, created_at, expires_at, nonce) VALUES ($1, $2, $3, $4, $5, 'in-progress', $6, $7,
  statement_timestamp() + interval '1 minute', statement_timestamp(), statement_timestamp() + interval '1 day', $8)`
	withTakeover := batchForm(strings.ReplaceAll(`INSERT INTO {{table}} AS r (id, tenant, operation, action_key,
  fingerprint, state, owner, token, lease_until, created_at, expires_at, attempts, attempt_count, granted,
  granted_from, nonce, promised, instance, settle_ms, sending, settle_until)
VALUES ($1, $2, $3, $4, $5, 'in-progress', $6, $12, now() + $7::bigint * interval '1 millisecond', now(),
  greatest(now() + $8::bigint * interval '1 millisecond', now() + 2 * $7::bigint * interval '1 millisecond'),
  jsonb_build_array(`+sprintf(attemptJSON, `1`, `'created'`, `$6::text`, `$12::bigint`)+`), 1, 'created', 'absent',
  $15, $16, $17, $18, $20::boolean, CASE WHEN $20::boolean THEN now() + $18::bigint * interval '1 millisecond' END)
ON CONFLICT (id) DO UPDATE SET`+takeover+`
WHERE `+owns+`
RETURNING `+prefixed("r.", columns), "{{table}}", s.table))
	fp := s.cfg.FingerprintKeys.Seal("f")
	key := func(round int, shape string, i int) ledger.Key {
		return ledger.Key{Tenant: "t", Operation: shape, Key: fmt.Sprintf("%d-%d", round, i)}
	}
	for round := range rounds {
		got := map[string]time.Duration{}
		got["creation"] = price(rows, func(b *pgx.Batch, from int) {
			for i := from; i < from+batchRows; i++ {
				k := key(round, "create", i)
				b.Queue(create, k.ID(), k.Tenant, k.Operation, k.Key, fp, "o", int64(60_000), int64(86_400_000),
					ledger.NewToken(), ledger.NewNonce(), true, "i", int64(30_000), true)
			}
		})
		got["with takeover"] = price(rows, func(b *pgx.Batch, from int) {
			for i := from; i < from+batchRows; i++ {
				k := key(round, "takeover", i)
				b.Queue(withTakeover, k.ID(), k.Tenant, k.Operation, k.Key, fp, "o", int64(60_000), int64(86_400_000),
					false, false, true, ledger.NewToken(), s.cfg.HistoryCap(), s.cfg.FingerprintKeys.Candidates("f"),
					ledger.NewNonce(), true, "i", int64(30_000), false, true)
			}
		})
		got["bare insert"] = price(rows, func(b *pgx.Batch, from int) {
			for i := from; i < from+batchRows; i++ {
				k := key(round, "bare", i)
				b.Queue(bare, k.ID(), k.Tenant, k.Operation, k.Key, fp, "o", ledger.NewToken(), ledger.NewNonce())
			}
		})
		t.Logf("round %d, creations: createSQL %v per row, with the takeover %v, bare INSERT %v",
			round, got["creation"], got["with takeover"], got["bare insert"])
	}
	if n := count(`SELECT count(*) FROM retrybudget_ledger`); n != 3*rows*rounds {
		t.Fatalf("%d rows created; want %d", n, 3*rows*rounds)
	}

	// Outcomes: the same rows, put back in progress before each shape.
	type action struct {
		id    string
		token int64
	}
	var actions []action
	res, err := conn.Query(ctx, `SELECT id, token FROM retrybudget_ledger WHERE operation = 'create' ORDER BY id LIMIT $1`, rows)
	if err != nil {
		t.Fatal(err)
	}
	for res.Next() {
		var a action
		if err := res.Scan(&a.id, &a.token); err != nil {
			t.Fatal(err)
		}
		actions = append(actions, a)
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	out, err := s.completeArgs(key(0, "outcome", 0), ledger.Outcome{Status: 201,
		Header: map[string][]string{"Content-Type": {"application/json"}}, Body: []byte(`{"id":"ch_1"}`), AttemptClass: "sent"})
	if err != nil {
		t.Fatal(err)
	}
	one := batchForm(s.queries["complete"])
	set := batchForm(`UPDATE retrybudget_ledger AS t SET state = 'completed', lease_until = NULL,
  status = i.status, header = i.header, body = i.body, body_hash = i.body_hash, body_len = i.body_len,
  body_omitted = i.body_omitted, outcome_sealed = i.sealed,
  attempts = CASE WHEN i.class = '' THEN t.attempts ELSE ` +
		appended(`t.attempts`, sprintf(attemptJSON, `t.attempt_count + 1`, `i.class`, `t.owner`, `t.token`), `i.kept`) + ` END,
  attempt_count = t.attempt_count + CASE WHEN i.class = '' THEN 0 ELSE 1 END,
  settle_until = CASE WHEN i.class = '' THEN t.settle_until ELSE now() + t.settle_ms * interval '1 millisecond' END
FROM unnest($1::text[], $2::bigint[], $3::integer[], $4::jsonb[], $5::bytea[], $6::text[], $7::bigint[],
  $8::boolean[], $9::boolean[], $10::text[], $11::integer[])
  AS i(id, token, status, header, body, body_hash, body_len, body_omitted, sealed, class, kept)
WHERE t.id = i.id AND t.token = i.token AND t.state = 'in-progress' AND t.expires_at >= now()`)
	column := `UPDATE retrybudget_ledger SET state = 'completed' WHERE id = $1 AND token = $2`
	reopen := `UPDATE retrybudget_ledger SET state = 'in-progress', lease_until = now() + interval '1 minute',
  status = NULL, header = NULL, body = NULL, attempts = '[]', attempt_count = 1 WHERE operation = 'create'`
	column1 := func(i int) []any { // the i-th argument of every row, as an array
		switch v := out[i].(type) {
		case int:
			return []any{fill(batchRows, v)}
		case int64:
			return []any{fill(batchRows, v)}
		case bool:
			return []any{fill(batchRows, v)}
		case string:
			return []any{fill(batchRows, v)}
		case []byte:
			return []any{fill(batchRows, v)}
		}
		t.Fatalf("argument %d has type %T", i, out[i])
		return nil
	}
	shapes := []struct {
		name  string
		queue func(b *pgx.Batch, from int)
	}{
		{"one statement per row", func(b *pgx.Batch, from int) {
			for _, a := range actions[from : from+batchRows] {
				b.Queue(one, append([]any{a.id, a.token}, out...)...)
			}
		}},
		{"one statement per batch", func(b *pgx.Batch, from int) {
			ids, tokens := make([]string, batchRows), make([]int64, batchRows)
			for j, a := range actions[from : from+batchRows] {
				ids[j], tokens[j] = a.id, a.token
			}
			args := []any{ids, tokens}
			for i := range out {
				args = append(args, column1(i)...)
			}
			b.Queue(set, args...)
		}},
		{"one column per row", func(b *pgx.Batch, from int) {
			for _, a := range actions[from : from+batchRows] {
				b.Queue(column, a.id, a.token)
			}
		}},
	}
	for round := range rounds {
		var line []string
		for _, sh := range shapes {
			if _, err := conn.Exec(ctx, reopen); err != nil {
				t.Fatal(err)
			}
			cpu := price(len(actions), sh.queue)
			if n := count(`SELECT count(*) FROM retrybudget_ledger WHERE operation = 'create' AND state = 'completed'`); n != len(actions) {
				t.Fatalf("%s completed %d rows; want %d", sh.name, n, len(actions))
			}
			line = append(line, fmt.Sprintf("%s %v", sh.name, cpu))
		}
		t.Logf("round %d, outcomes: %s", round, strings.Join(line, ", "))
	}
}

// fill returns n copies of v.
func fill[T any](n int, v T) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// backendCPU returns the CPU time the server process pid has used.
func backendCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The fields after the command's closing parenthesis: utime and stime
	// are the 12th and 13th, in clock ticks (USER_HZ, 100 on Linux).
	_, rest, _ := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, fmt.Errorf("unexpected %s", b)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("unexpected %s", b)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}
