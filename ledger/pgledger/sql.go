package pgledger

import "strings"

// The statements, written once with {{table}} for the table's quoted name.
// Every time comes from now(), the database's clock: in a statement of its
// own, now() is that statement's start, so one decision sees one instant.
//
// The parameters of the takeover (takeoverSQL); the creation's
// (createSQL) are a subset, numbered on their own:
//
//	$1 id  $2 tenant  $3 operation  $4 key  $5 fingerprint  $6 owner
//	$7 lease ms  $8 retention ms  $9 limited  $10 reconciler
//	$11 keys honoured  $12 first token of a new record
//	$13 attempts kept (ledger.Config.MaxAttempts)
//	$15 nonce  $16 marks sending (ReserveRequest.MarksSending)
//	$17 instance: the owner's run (ReserveRequest.Instance), '' if unknown
//	$18 settle time of this grant's sends, ms (ReserveRequest.Settle)
//	$19 replaces failed (ReserveRequest.ReplacesFailed)
//	$20 sending (ReserveRequest.Sending): a grant that sends also writes
//	    the sending mark and starts its settle time, as markSendingSQL
//	$14 every stored fingerprint that matches the request
//	    (ledger.FingerprintKeys.Candidates); $5 is the request's, sealed

// columns is every column a record is read from, in scanRecord's order.
const columns = `id, tenant, operation, action_key, fingerprint, state, owner, token,
  lease_until, reason, created_at, expires_at, attempts, attempt_count,
  granted, granted_from, granted_unsent, atomic, nonce, promised, sending,
  status, header, body, body_hash, body_len, body_omitted, outcome_sealed,
  instance, granted_reclaim, settle_until, granted_settling, settlement`

// effState is the state the decision sees: a stored state, except that an
// atomic action whose lease ran out counts as failed, because its effects
// were rolled back with its transaction.
const effState = `(CASE WHEN r.state = 'in-progress' AND r.atomic AND r.lease_until <= now()
  THEN 'failed' ELSE r.state END)`

// reclaim is ledger.Input.Reclaim over an existing row r in progress: its
// lease was granted to another run of the requesting owner, which
// restarted, so the lease counts as expired.
const reclaim = `($6::text <> '' AND $17::text <> '' AND r.owner = $6::text
  AND r.instance <> '' AND r.instance <> $17::text)`

// decision is ledger.Resolve over an existing row r, as a sub-select of
// one row d: d.eff is effState, d.expired whether r's retention has run
// out, d.reclaim is reclaim, and d.v the verdict. Each is written once and
// computed once: the reservation's writes read them from d (OFFSET 0 keeps
// the planner from inlining a layer, which would repeat its expressions
// wherever the next layer reads them, and the server pays for every copy
// at every execution's start). Go re-checks every grant against Resolve
// (see Store.Reserve), so this and resolve.go cannot drift silently.
var decision = `(SELECT x.*, CASE
  WHEN x.expired THEN (CASE WHEN $9 THEN 'delayed' ELSE 'created' END)
  WHEN x.eff NOT IN ('in-progress', 'completed', 'failed', 'uncertain') THEN 'uncertain'
  WHEN x.eff = 'failed' AND $19::boolean THEN (CASE WHEN $9 THEN 'delayed' ELSE 'retry' END)
  WHEN NOT (r.fingerprint = ANY($14::text[])) THEN 'conflict'
  WHEN x.eff = 'completed' THEN 'replayed'
  WHEN x.eff = 'failed' THEN (CASE WHEN $9 THEN 'delayed' ELSE 'retry' END)
  WHEN x.eff = 'in-progress' AND r.nonce = $15 THEN r.granted
  WHEN x.eff = 'in-progress' AND r.lease_until > now() AND NOT x.reclaim THEN 'pending'
  WHEN x.eff = 'in-progress' AND r.promised AND NOT r.sending THEN (CASE WHEN $9 THEN 'delayed' ELSE 'retry' END)
  WHEN $10 THEN 'reconcile'
  WHEN $11 THEN (CASE WHEN $9 THEN 'delayed' ELSE 'resend' END)
  ELSE 'uncertain'
END AS v
FROM (SELECT ` + effState + ` AS eff, r.expires_at < now() AS expired, ` + reclaim + ` AS reclaim OFFSET 0) x
OFFSET 0) d`

// owns is true when the decision hands the action to the caller.
// A regrant (the nonce of the current grant) owns but writes nothing: the
// grant stands as it was made, and Reserve reads it back.
var owns = `(SELECT d.v IN ('created', 'retry', 'resend', 'reconcile')
  AND NOT (NOT d.expired AND r.state = 'in-progress' AND r.nonce = $15) FROM ` + decision + `)`

// marks is true when a grant writes the sending mark with itself
// (ReserveRequest.Sending): where it sends, not where a reconcile only
// asks.
const marks = `($20::boolean AND d.v IN ('created', 'retry', 'resend'))`

// attemptJSON builds one history entry.
const attemptJSON = `jsonb_build_object('n', %s, 'at', (extract(epoch FROM now()) * 1000000)::bigint,
  'class', %s, 'owner', %s, 'token', %s)`

// takeover is the SET list of a grant over an existing row r: a fresh
// record when r has expired, else the next token, a lease and one more
// attempt, keeping the action's identity, creation time and history (and
// its fingerprint, unless r failed and $19: then the request's, see
// ledger.Resolve). It is one multiple-column assignment from a sub-select
// over decision, each column's value in the order of the list. (In an
// UPDATE's SET, r.col is the value before the update.)
var takeover = takeoverSet()

func takeoverSet() string {
	cols := []struct{ name, value string }{
		{"tenant", `CASE WHEN d.expired THEN $2 ELSE r.tenant END`},
		{"operation", `CASE WHEN d.expired THEN $3 ELSE r.operation END`},
		{"action_key", `CASE WHEN d.expired THEN $4 ELSE r.action_key END`},
		{"fingerprint", `CASE WHEN d.expired OR (d.eff = 'failed' AND $19::boolean) THEN $5 ELSE r.fingerprint END`},
		{"state", `'in-progress'`},
		{"owner", `$6::text`},
		{"instance", `$17::text`},
		{"token", `CASE WHEN d.expired THEN $12 ELSE r.token + 1 END`},
		{"lease_until", `now() + $7::bigint * interval '1 millisecond'`},
		{"reason", `''`},
		{"created_at", `CASE WHEN d.expired THEN now() ELSE r.created_at END`},
		{"expires_at", `greatest(CASE WHEN d.expired THEN now() + $8::bigint * interval '1 millisecond' ELSE r.expires_at END,
    now() + 2 * $7::bigint * interval '1 millisecond')`},
		{"attempts", appended(`CASE WHEN d.expired THEN '[]'::jsonb ELSE r.attempts END`,
			sprintf(attemptJSON, `CASE WHEN d.expired THEN 1 ELSE r.attempt_count + 1 END`, `d.v`, `$6::text`,
				`CASE WHEN d.expired THEN $12 ELSE r.token + 1 END`), `$13`)},
		{"attempt_count", `CASE WHEN d.expired THEN 1 ELSE r.attempt_count + 1 END`},
		{"granted", `d.v`},
		{"granted_from", `CASE WHEN d.expired THEN 'expired' ELSE d.eff END`},
		{"atomic", `false`},
		{"granted_unsent", `NOT d.expired AND d.eff = 'in-progress' AND r.promised AND NOT r.sending`},
		{"granted_reclaim", `NOT d.expired AND d.eff = 'in-progress' AND r.lease_until > now() AND d.reclaim`},
		{"granted_settling", `NOT d.expired AND coalesce(r.settle_until > now(), false)`},
		{"settle_ms", `$18::bigint`},
		{"settle_until", `CASE WHEN ` + marks + ` THEN now() + $18::bigint * interval '1 millisecond'
    WHEN d.expired THEN NULL ELSE r.settle_until END`},
		{"nonce", `$15::text`},
		{"promised", `$16::boolean`},
		{"sending", marks + ` OR (NOT d.expired AND r.sending)`},
	}
	// The outcome's columns: cleared when r has expired, else kept.
	for _, c := range []string{"status", "header", "body", "body_hash", "body_len", "body_omitted", "outcome_sealed", "settlement"} {
		cols = append(cols, struct{ name, value string }{c, `CASE WHEN d.expired THEN NULL ELSE r.` + c + ` END`})
	}
	names := make([]string, len(cols))
	values := make([]string, len(cols))
	for i, c := range cols {
		names[i], values[i] = c.name, c.value
	}
	return ` (` + strings.Join(names, ", ") + `) = (SELECT
  ` + strings.Join(values, ",\n  ") + `
  FROM ` + decision + `)`
}

// createSQL creates the record of an action that has none: one INSERT on
// the primary key that writes nothing when a row for the action exists
// (live, expired or being inserted by another transaction, whose end it
// waits for), and returns the new record otherwise. It carries none of the
// takeover's expressions: the server compiles every expression of a
// statement at each execution's start, written to run or not, and the
// takeover's would double the cost of the common case, an action's first
// reservation. Its parameters:
//
//	$1 id  $2 tenant  $3 operation  $4 key  $5 fingerprint  $6 owner
//	$7 lease ms  $8 retention ms  $9 first token  $10 nonce
//	$11 marks sending  $12 instance  $13 settle ms  $14 sending
var createSQL = `INSERT INTO {{table}} AS r (id, tenant, operation, action_key, fingerprint, state, owner,
  token, lease_until, created_at, expires_at, attempts, attempt_count, granted, granted_from, nonce, promised,
  instance, settle_ms, sending, settle_until)
VALUES ($1, $2, $3, $4, $5, 'in-progress', $6, $9, now() + $7::bigint * interval '1 millisecond', now(),
  greatest(now() + $8::bigint * interval '1 millisecond', now() + 2 * $7::bigint * interval '1 millisecond'),
  jsonb_build_array(` + sprintf(attemptJSON, `1`, `'created'`, `$6::text`, `$9::bigint`) + `), 1, 'created', 'absent',
  $10, $11, $12, $13, $14::boolean, CASE WHEN $14::boolean THEN now() + $13::bigint * interval '1 millisecond' END)
ON CONFLICT (id) DO NOTHING
RETURNING ` + prefixed("r.", columns)

// takeoverSQL grants an existing record with the reservation's parameters
// (above) when the decision owns it, and otherwise writes nothing and
// returns no row. It never creates a record: a rate-limited destination
// must not (only a takeover, for a reconciler, may write), and elsewhere
// createSQL has run first.
var takeoverSQL = `UPDATE {{table}} AS r SET` + takeover + `
WHERE r.id = $1 AND ` + owns + `
RETURNING ` + prefixed("r.", columns)

// readSQL reads a record with the database's time, for decisions that
// write nothing.
const readSQL = `SELECT ` + columns + `, now() FROM {{table}} WHERE id = $1`

// getSQL reads a live record.
const getSQL = `SELECT ` + columns + ` FROM {{table}} WHERE id = $1 AND expires_at >= now()`

// fenced is the condition of every write by an owner: the token is
// current, the action in progress and the record live.
const fenced = `id = $1 AND token = $2 AND state = 'in-progress' AND expires_at >= now()`

const renewSQL = `UPDATE {{table}} SET lease_until = now() + $3::bigint * interval '1 millisecond',
  expires_at = greatest(expires_at, now() + 2 * $3::bigint * interval '1 millisecond')
WHERE ` + fenced

// attemptSQL appends a send and starts its settle time again.
var attemptSQL = `UPDATE {{table}} SET attempts = ` +
	appended(`attempts`, sprintf(attemptJSON, `attempt_count + 1`, `$3::text`, `owner`, `token`), `$4`) + `,
  attempt_count = attempt_count + 1,
  settle_until = now() + settle_ms * interval '1 millisecond'
WHERE ` + fenced + `
RETURNING attempt_count, now(), owner`

// settledAttempt is the SET list that records the send a settling write
// carries (ledger.Outcome.AttemptClass, ledger.Failure.AttemptClass) as
// attemptSQL would: class is its parameter (” records none), limit the
// attempts kept.
func settledAttempt(class, limit string) string {
	return sprintf(`attempts = CASE WHEN %s::text = '' THEN attempts ELSE `, class) +
		appended(`attempts`, sprintf(attemptJSON, `attempt_count + 1`, class+`::text`, `owner`, `token`), limit) + ` END,
  attempt_count = attempt_count + CASE WHEN ` + class + `::text = '' THEN 0 ELSE 1 END,
  settle_until = CASE WHEN ` + class + `::text = '' THEN settle_until ELSE now() + settle_ms * interval '1 millisecond' END`
}

// completeSQL stores the outcome; $10 and $11 are settledAttempt's.
var completeSQL = `UPDATE {{table}} SET state = 'completed', lease_until = NULL,
  status = $3, header = $4, body = $5, body_hash = $6, body_len = $7, body_omitted = $8,
  outcome_sealed = $9, ` + settledAttempt(`$10`, `$11`) + `
WHERE ` + fenced

// failSQL gives the action up; $5 and $6 are settledAttempt's.
var failSQL = `UPDATE {{table}} SET state = $3, lease_until = NULL, reason = $4, ` + settledAttempt(`$5`, `$6`) + `
WHERE ` + fenced

// sweepSQL lists stuck records in Sweep's order; its index covers it.
const sweepSQL = `SELECT ` + columns + ` FROM {{table}}
WHERE state IN ('in-progress', 'uncertain') AND expires_at >= now()
  AND (state = 'uncertain' OR lease_until <= now())
ORDER BY lease_until NULLS FIRST, created_at, id
LIMIT $1`

// purgeSQL deletes up to $1 expired records, oldest first, skipping rows
// another transaction holds.
const purgeSQL = `DELETE FROM {{table}} WHERE id IN (
  SELECT id FROM {{table}} WHERE expires_at < now() ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)`

// markSendingSQL records that the owner is about to send, and starts the
// send's settle time.
const markSendingSQL = `UPDATE {{table}} SET sending = true,
  settle_until = now() + settle_ms * interval '1 millisecond'
WHERE ` + fenced

// markAtomicSQL records that the owner's effects happen only inside the
// completing transaction.
const markAtomicSQL = `UPDATE {{table}} SET atomic = true WHERE ` + fenced

// appended is the JSON array h with entry added at its end, without its
// oldest entries beyond the integer parameter limit. Every write keeps a
// history within its limit, so below the limit the entry is simply added;
// only a full history is sliced, by jsonpath. The branch not taken costs
// little: in a loop of outcome writes on PostgreSQL 15 (medians of five
// runs), a write without the history took 19 µs, with the entry added 24,
// with the slice at every write 30, and in this form 25.6.
func appended(h, entry, limit string) string {
	return `CASE WHEN jsonb_array_length(` + h + `) < ` + limit + `::integer THEN ` + h + ` || ` + entry + `
    ELSE jsonb_path_query_array(` + h + ` || ` + entry + `, '$[last - $n + 1 to last]',
      jsonb_build_object('n', ` + limit + `::integer)) END`
}

func prefixed(p, cols string) string {
	fields := strings.Split(cols, ",")
	for i, f := range fields {
		fields[i] = p + strings.TrimSpace(f)
	}
	return strings.Join(fields, ", ")
}

// sprintf substitutes %s in order; fmt.Sprintf would also read the % in
// SQL text.
func sprintf(format string, args ...string) string {
	for _, a := range args {
		format = strings.Replace(format, "%s", a, 1)
	}
	return format
}
