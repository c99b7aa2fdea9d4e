package pgledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/retrybudget/retrybudget/ledger"
)

// DB is what a Store needs from PostgreSQL: *pgxpool.Pool, *pgx.Conn and
// pgx.Tx all satisfy it. Use a pool: a Store is shared by concurrent
// callers, and BeginAtomic holds a connection for a whole handler.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Store is the ledger.Store on PostgreSQL: one row per action in one
// table, keyed by the action's identity (ledger.Key.ID). Reserve creates a
// new action's record with one INSERT ... ON CONFLICT DO NOTHING on that
// key, so two owners can never both create it, and takes an existing one
// over with one UPDATE whose decision and grant are atomic; fenced writes
// are one UPDATE each, conditioned on the token. Leases and expiry are
// judged by the database's clock (now()), so every client shares one
// clock. A committed write is as durable as the database makes it: with
// PostgreSQL's defaults (fsync, synchronous_commit on) it survives a crash
// of the server.
//
// Apply the schema with Migrate before first use. Expired records are
// treated as absent at once but stay in the table until Purge deletes
// them; run Purge periodically.
type Store struct {
	db      DB
	cfg     Config
	table   string // quoted, possibly schema-qualified
	queries map[string]string
	// slots hands out the open atomic transactions (Config.MaxAtomic,
	// Config.MaxAtomicPerTenant); nil means no bound.
	slots *slots
	// batch shares round trips between concurrent statements (see
	// batch.go); nil when Config.MaxBatch is 1 or the DB is one session.
	batch *batcher
}

// New returns a Store on db. It does not touch the database; call Migrate
// once (at deploy or start-up) to create the table. It returns an error
// wrapping ledger.ErrNoFingerprintKey when cfg has no fingerprint key: a
// database is read by more people than the service, so it keeps request
// fingerprints only sealed (see ledger.FingerprintKeys). It returns an
// error wrapping ledger.ErrInvalidConfig when Config.Table or Config.Schema
// is not a plain name (see Config.Table).
func New(db DB, cfg Config) (*Store, error) {
	if err := cfg.FingerprintKeys.Validate(); err != nil {
		return nil, fmt.Errorf("pgledger.New: %w", err)
	}
	if err := cfg.EncryptionKeys.Validate(); err != nil {
		return nil, fmt.Errorf("pgledger.New: %w", err)
	}
	if err := checkName("Table", cfg.table()); err != nil {
		return nil, err
	}
	if cfg.Schema != "" {
		if err := checkName("Schema", cfg.Schema); err != nil {
			return nil, err
		}
	}
	id := pgx.Identifier{cfg.table()}
	if cfg.Schema != "" {
		id = pgx.Identifier{cfg.Schema, cfg.table()}
	}
	s := &Store{db: db, cfg: cfg, table: id.Sanitize(), queries: map[string]string{}}
	if n := cfg.maxAtomic(db); n > 0 {
		s.slots = newSlots(n, cfg.maxAtomicPerTenant(n))
	}
	for name, q := range map[string]string{
		"create": createSQL, "takeover": takeoverSQL, "read": readSQL, "get": getSQL,
		"renew": renewSQL, "attempt": attemptSQL, "complete": completeSQL, "fail": failSQL,
		"sweep": sweepSQL, "purge": purgeSQL, "markAtomic": markAtomicSQL, "markSending": markSendingSQL,
		"markEffect": markEffectSQL, "settleCompleted": settleCompletedSQL, "settleFailed": settleFailedSQL,
	} {
		s.queries[name] = strings.ReplaceAll(q, "{{table}}", s.table)
	}
	s.batch = newBatcher(db, cfg.MaxBatch, s.queries)
	return s, nil
}

// bound returns ctx limited by the Store's timeout.
func (s *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.cfg.timeout())
}

// maxReserveRounds bounds Reserve's loop: a round that wrote nothing reads
// the record, and if the record changed so that it would now be owned, the
// reservation is tried again.
const maxReserveRounds = 4

// Reserve implements ledger.Store. The grant is one statement: an INSERT
// that creates the record of a new action, or, for a record that exists,
// an UPDATE that takes it over when the decision owns it. A decision that
// owns nothing (pending, replayed, conflict, uncertain, delayed) is made on
// the record read right after.
func (s *Store) Reserve(ctx context.Context, req ledger.ReserveRequest) (ledger.Reservation, error) {
	if err := ctx.Err(); err != nil {
		return ledger.Reservation{}, err
	}
	if err := req.Key.Validate(); err != nil {
		return ledger.Reservation{}, err
	}
	lease, retention, err := s.cfg.Durations(req.Lease, req.Retention)
	if err != nil {
		return ledger.Reservation{}, err
	}
	settle, err := ledger.SettleTime(req.Settle, lease)
	if err != nil {
		return ledger.Reservation{}, err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	// A Reserve sent again after its reply was lost carries the same
	// nonce and gets its own grant back.
	if req.Nonce == "" {
		req.Nonce = ledger.NewNonce()
	}
	id := req.Key.ID()
	fp := s.cfg.FingerprintKeys.Seal(req.Fingerprint)
	for range maxReserveRounds {
		var rec ledger.Record
		var m meta
		err := pgx.ErrNoRows
		if !req.Limited {
			// The common case, an action's first reservation, costs the
			// creation alone; a record that exists is taken over next.
			rec, m, err = scanRecord(s.cfg.EncryptionKeys, s.on(id).QueryRow(ctx, s.queries["create"], id, req.Key.Tenant,
				req.Key.Operation, req.Key.Key, fp, req.Owner, lease.Milliseconds(), retention.Milliseconds(), ledger.NewToken(),
				req.Nonce, req.MarksSending, req.Instance, settle.Milliseconds(), req.Sending))
		}
		if errors.Is(err, pgx.ErrNoRows) {
			rec, m, err = scanRecord(s.cfg.EncryptionKeys, s.on(id).QueryRow(ctx, s.queries["takeover"], id, req.Key.Tenant,
				req.Key.Operation, req.Key.Key, fp, req.Owner, lease.Milliseconds(), retention.Milliseconds(),
				req.Limited, req.Reconciler, req.KeysHonoured, ledger.NewToken(), s.cfg.HistoryCap(),
				s.cfg.FingerprintKeys.Candidates(req.Fingerprint), req.Nonce, req.MarksSending, req.Instance,
				settle.Milliseconds(), req.ReplacesFailed, req.Sending))
		}
		switch {
		case err == nil:
			return s.granted(req, rec, m)
		case !errors.Is(err, pgx.ErrNoRows):
			return ledger.Reservation{}, fmt.Errorf("ledger: postgres reserve: %w", err)
		}
		res, err := s.decide(ctx, req)
		// decide hands back a token only for a regrant: the grant this
		// very request was made, which stands as written.
		if err != nil || !res.Verdict.Owns() || res.Token != 0 {
			return res, err
		}
		// The record changed between the statements so that the caller
		// would now own it: reserve again.
	}
	return ledger.Reservation{}, fmt.Errorf("ledger: postgres reserve: the record changed under %d rounds", maxReserveRounds)
}

// granted checks a grant the reservation statement wrote against Resolve.
func (s *Store) granted(req ledger.ReserveRequest, rec ledger.Record, m meta) (ledger.Reservation, error) {
	from, err := parseFrom(m.grantedFrom)
	if err != nil {
		return ledger.Reservation{}, err
	}
	in := input(req)
	if from == ledger.StateExpired {
		// A row past expires_at, kept until Purge: the expiry event.
		in.State = from
	} else if from != ledger.StateAbsent {
		in.State, in.StoredFingerprint = from, rec.Fingerprint
		in.Fingerprint = s.cfg.FingerprintKeys.Match(rec.Fingerprint, req.Fingerprint)
		// A takeover of a live lease is a reclaim; any other of an
		// action in progress found its lease over.
		in.LeaseExpired = from == ledger.StateInProgress && !m.grantedReclaim
		in.Reclaim = m.grantedReclaim
		in.Unsent = m.grantedUnsent
		in.Settling = m.grantedSettling
	}
	res := ledger.Reservation{Decision: ledger.Resolve(in), Record: rec, Token: m.token,
		Expired: from == ledger.StateExpired, SettlesAttempt: true}
	res.Sending = req.Sending && res.Send // the statement marks such grants
	if res.Verdict.String() != m.granted {
		return ledger.Reservation{}, fmt.Errorf("%w: SQL granted %q, Resolve decides %q", ledger.ErrCorrupt, m.granted, res.Verdict)
	}
	if res.Settling && len(rec.Attempts) > 0 {
		// The grant's own entry, the newest, carries the statement's now().
		res.RetryAfter = rec.SettleUntil.Sub(rec.Attempts[len(rec.Attempts)-1].At)
	}
	return res, nil
}

// decide reads the record and applies Resolve to it, for a reservation
// that wrote nothing.
func (s *Store) decide(ctx context.Context, req ledger.ReserveRequest) (ledger.Reservation, error) {
	var now time.Time
	rec, m, err := scanRecord(s.cfg.EncryptionKeys, s.on(req.Key.ID()).QueryRow(ctx, s.queries["read"], req.Key.ID()), &now)
	in := input(req)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return ledger.Reservation{}, fmt.Errorf("ledger: postgres reserve: %w", err)
	case !now.After(rec.ExpiresAt) && m.stateErr != nil:
		return ledger.Reservation{}, m.stateErr
	case !now.After(rec.ExpiresAt):
		in.State, in.StoredFingerprint = rec.State, rec.Fingerprint
		in.Fingerprint = s.cfg.FingerprintKeys.Match(rec.Fingerprint, req.Fingerprint)
		if rec.State == ledger.StateInProgress {
			in.Regrant = m.nonce == req.Nonce
			in.Unsent = m.promised && !rec.Sending
			in.Reclaim = req.Reclaims(rec)
			in.Settling = now.Before(rec.SettleUntil)
			if in.Regrant {
				var ok bool
				if in.Granted, ok = ledger.ParseVerdict(m.granted); !ok {
					return ledger.Reservation{}, fmt.Errorf("%w: granted %q", ledger.ErrCorrupt, m.granted)
				}
			}
		}
		if rec.State == ledger.StateUncertain {
			in.Settling = now.Before(rec.SettleUntil)
		}
		if rec.State == ledger.StateInProgress && !now.Before(rec.LeaseUntil) {
			in.LeaseExpired = true
			if m.atomic {
				in.State, in.LeaseExpired = ledger.StateFailed, false
			}
		}
	}
	res := ledger.Reservation{Decision: ledger.Resolve(in), SettlesAttempt: true}
	if in.State == ledger.StateAbsent {
		res.Record = ledger.Record{Key: req.Key}
		return res, nil
	}
	res.Record = rec
	if in.Regrant {
		// The grant this very request made, marked as it asked.
		res.Token, res.Sending = m.token, req.Sending && res.Send
	}
	switch {
	case res.Verdict == ledger.VerdictPending:
		res.RetryAfter = rec.LeaseUntil.Sub(now)
	case res.Settling:
		res.RetryAfter = rec.SettleUntil.Sub(now)
	}
	return res, nil
}

func input(req ledger.ReserveRequest) ledger.Input {
	return ledger.Input{
		Fingerprint:    req.Fingerprint,
		Limited:        req.Limited,
		Reconciler:     req.Reconciler,
		KeysHonoured:   req.KeysHonoured,
		ReplacesFailed: req.ReplacesFailed,
	}
}

func parseFrom(s string) (ledger.State, error) {
	st, err := ledger.ParseState(s)
	if err != nil {
		return 0, fmt.Errorf("%w: granted_from %q", ledger.ErrCorrupt, s)
	}
	return st, nil
}

// Renew implements ledger.Store.
func (s *Store) Renew(ctx context.Context, k ledger.Key, token int64, lease time.Duration) error {
	lease, _, err := s.cfg.Durations(lease, 0)
	if err != nil {
		return err
	}
	return s.fencedExec(ctx, "renew", k, token, lease.Milliseconds())
}

// AddAttempt implements ledger.Store.
func (s *Store) AddAttempt(ctx context.Context, k ledger.Key, token int64, class string) (ledger.Attempt, error) {
	if err := ctx.Err(); err != nil {
		return ledger.Attempt{}, err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	a := ledger.Attempt{Class: class, Token: token}
	err := s.on(k.ID()).QueryRow(ctx, s.queries["attempt"], k.ID(), token, class, s.cfg.HistoryCap()).Scan(&a.N, &a.At, &a.Owner)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return ledger.Attempt{}, ledger.NotOwner(k)
	case err != nil:
		return ledger.Attempt{}, fmt.Errorf("ledger: postgres add attempt: %w", err)
	}
	a.At = norm(a.At)
	return a, nil
}

// Complete implements ledger.Store.
func (s *Store) Complete(ctx context.Context, k ledger.Key, token int64, o ledger.Outcome) error {
	args, err := s.completeArgs(k, o)
	if err != nil {
		return err
	}
	return s.fencedExec(ctx, "complete", k, token, args...)
}

// completeArgs returns completeSQL's $3 to $11: the stored outcome
// (outcomeArgs), then the send it answers and the attempts kept.
func (s *Store) completeArgs(k ledger.Key, o ledger.Outcome) ([]any, error) {
	args, err := s.outcomeArgs(k, o)
	if err != nil {
		return nil, err
	}
	return append(args, o.AttemptClass, s.cfg.HistoryCap()), nil
}

// outcomeArgs returns the stored outcome's own columns, completeSQL's $3
// to $9 (and settleCompleted's).
func (s *Store) outcomeArgs(k ledger.Key, o ledger.Outcome) ([]any, error) {
	st := s.cfg.StoredOutcome(o)
	h, err := json.Marshal(st.Header)
	if err != nil {
		return nil, fmt.Errorf("ledger: encode headers: %w", err)
	}
	body := st.Body
	if keys := s.cfg.EncryptionKeys; len(keys) > 0 {
		// The column is jsonb: sealed headers are kept as one JSON
		// string (base64), which scanRecord recognises.
		if h, err = keys.Seal(k, "headers", h); err != nil {
			return nil, err
		}
		if h, err = json.Marshal(h); err != nil {
			return nil, fmt.Errorf("ledger: encode headers: %w", err)
		}
		if len(body) > 0 {
			if body, err = keys.Seal(k, "body", body); err != nil {
				return nil, err
			}
		}
	}
	return []any{st.Status, h, body, st.BodyHash, st.BodyLen, st.BodyOmitted, len(s.cfg.EncryptionKeys) > 0}, nil
}

// MarkSending implements ledger.Store.
func (s *Store) MarkSending(ctx context.Context, k ledger.Key, token int64) error {
	return s.fencedExec(ctx, "markSending", k, token)
}

// Fail implements ledger.Store.
func (s *Store) Fail(ctx context.Context, k ledger.Key, token int64, f ledger.Failure) error {
	st := ledger.StateFailed
	if f.EffectPossible {
		st = ledger.StateUncertain
	}
	return s.fencedExec(ctx, "fail", k, token, st.String(), f.Reason, f.AttemptClass, s.cfg.HistoryCap())
}

// fencedExec runs an owner's write, which changes exactly one row when
// token is current and none otherwise.
func (s *Store) fencedExec(ctx context.Context, op string, k ledger.Key, token int64, args ...any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	tag, err := s.on(k.ID()).Exec(ctx, s.queries[op], append([]any{k.ID(), token}, args...)...)
	if err != nil {
		return fmt.Errorf("ledger: postgres %s: %w", op, err)
	}
	if tag.RowsAffected() != 1 {
		return ledger.NotOwner(k)
	}
	return nil
}

// Get implements ledger.Store.
func (s *Store) Get(ctx context.Context, k ledger.Key) (ledger.Record, error) {
	if err := ctx.Err(); err != nil {
		return ledger.Record{}, err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rec, m, err := scanRecord(s.cfg.EncryptionKeys, s.db.QueryRow(ctx, s.queries["get"], k.ID()))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return ledger.Record{}, ledger.ErrNotFound
	case err != nil:
		return ledger.Record{}, fmt.Errorf("ledger: postgres get: %w", err)
	}
	return rec, m.stateErr
}

// Sweep implements ledger.Store. It reads only the stuck records through
// a partial index over in-progress and uncertain rows, in the order Sweep
// promises, so its cost grows with the actions in flight or uncertain, not
// with the table.
func (s *Store) Sweep(ctx context.Context, limit int) ([]ledger.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var lim any // NULL: no limit
	if limit > 0 {
		lim = limit
	}
	rows, err := s.db.Query(ctx, s.queries["sweep"], lim)
	if err != nil {
		return nil, fmt.Errorf("ledger: postgres sweep: %w", err)
	}
	defer rows.Close()
	var (
		out     []ledger.Record
		skipped []error
	)
	for rows.Next() {
		rec, m, err := scanRecord(s.cfg.EncryptionKeys, rows)
		if err == nil {
			err = m.stateErr
		}
		switch {
		case errors.Is(err, ledger.ErrCorrupt):
			// One bad record must not hide the stuck work around it.
			skipped = append(skipped, err)
			continue
		case err != nil:
			return nil, fmt.Errorf("ledger: postgres sweep: %w", err)
		}
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger: postgres sweep: %w", err)
	}
	if len(skipped) > 0 {
		return out, fmt.Errorf("ledger: postgres sweep: skipped %d records that cannot be decoded: %w", len(skipped), errors.Join(skipped...))
	}
	return out, nil
}

// Purge deletes up to limit records past their retention, oldest expiry
// first, and returns how many it deleted. Zero limit means
// DefaultPurgeBatch. Expired records are already treated as absent; Purge
// only reclaims their space, through the index on expires_at, so call it
// periodically (say every minute) until it returns fewer than limit.
func (s *Store) Purge(ctx context.Context, limit int) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if limit <= 0 {
		limit = DefaultPurgeBatch
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	tag, err := s.db.Exec(ctx, s.queries["purge"], limit)
	if err != nil {
		return 0, fmt.Errorf("ledger: postgres purge: %w", err)
	}
	return tag.RowsAffected(), nil
}

var _ ledger.Store = (*Store)(nil)
