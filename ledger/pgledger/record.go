package pgledger

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// meta is what a row holds beside the ledger.Record.
type meta struct {
	token       int64
	granted     string
	grantedFrom string
	atomic      bool
	// grantedUnsent is the Unsent input of the last grant.
	grantedUnsent bool
	nonce         string
	promised      bool
	// grantedReclaim is the Reclaim input of the last grant.
	grantedReclaim bool
	// grantedSettling is the Settling input of the last grant.
	grantedSettling bool
	// stateErr is ErrCorrupt for a state this version cannot read, which
	// Reserve still decides on (as uncertain) before reporting it.
	stateErr error
}

// storedAttempt is one history entry as attemptJSON builds it.
type storedAttempt struct {
	N     int    `json:"n"`
	At    int64  `json:"at"` // Unix microseconds
	Class string `json:"class"`
	Owner string `json:"owner"`
	Token int64  `json:"token"`
}

// row is what pgx.Row and pgx.Rows share.
type row interface{ Scan(dest ...any) error }

// scanRecord reads the columns of columns, then extra.
func scanRecord(keys ledger.EncryptionKeys, r row, extra ...any) (ledger.Record, meta, error) {
	var (
		rec          ledger.Record
		m            meta
		id, state    string
		lease        *time.Time
		attempts     []byte
		attemptCount int
		status       *int
		header, body []byte
		bodyHash     *string
		bodyLen      *int64
		bodyOmitted  *bool
		sealedMark   *bool // outcome_sealed; nil in rows written before it
		settleUntil  *time.Time
		settlement   []byte // NULL when no operator settled the action
	)
	dest := []any{&id, &rec.Key.Tenant, &rec.Key.Operation, &rec.Key.Key, &rec.Fingerprint, &state,
		&rec.Owner, &m.token, &lease, &rec.Reason, &rec.CreatedAt, &rec.ExpiresAt, &attempts, &attemptCount,
		&m.granted, &m.grantedFrom, &m.grantedUnsent, &m.atomic, &m.nonce, &m.promised, &rec.Sending, &status, &header, &body, &bodyHash, &bodyLen, &bodyOmitted, &sealedMark,
		&rec.Instance, &m.grantedReclaim, &settleUntil, &m.grantedSettling, &settlement}
	if err := r.Scan(append(dest, extra...)...); err != nil {
		return ledger.Record{}, meta{}, err
	}
	for _, e := range extra {
		if t, ok := e.(*time.Time); ok {
			*t = norm(*t)
		}
	}
	rec.CreatedAt, rec.ExpiresAt = norm(rec.CreatedAt), norm(rec.ExpiresAt)
	if lease != nil {
		rec.LeaseUntil = norm(*lease)
	}
	if settleUntil != nil {
		rec.SettleUntil = norm(*settleUntil)
	}
	if settlement != nil {
		var sj storedSettlement
		if err := json.Unmarshal(settlement, &sj); err != nil {
			return ledger.Record{}, meta{}, fmt.Errorf("%w: settlement: %v", ledger.ErrCorrupt, err)
		}
		rec.Settlement = &ledger.Settlement{By: sj.By, Reason: sj.Reason, At: time.UnixMicro(sj.At), Applied: sj.Applied, Reference: sj.Reference}
	}
	st, err := ledger.ParseState(state)
	if err != nil || st == ledger.StateAbsent || st == ledger.StateExpired {
		m.stateErr = fmt.Errorf("%w: state %q", ledger.ErrCorrupt, state)
	}
	rec.State = st
	var as []storedAttempt
	if err := json.Unmarshal(attempts, &as); err != nil {
		return ledger.Record{}, meta{}, fmt.Errorf("%w: attempts: %v", ledger.ErrCorrupt, err)
	}
	for _, a := range as {
		rec.Attempts = append(rec.Attempts, ledger.Attempt{N: a.N, At: time.UnixMicro(a.At), Class: a.Class, Owner: a.Owner, Token: a.Token})
	}
	if rec.State == ledger.StateCompleted {
		if status == nil || bodyHash == nil || bodyLen == nil || bodyOmitted == nil {
			return ledger.Record{}, meta{}, fmt.Errorf("%w: completed without an outcome", ledger.ErrCorrupt)
		}
		o := &ledger.Outcome{Status: *status, BodyHash: *bodyHash, BodyLen: *bodyLen, BodyOmitted: *bodyOmitted}
		// Whether the outcome was encrypted is read from the row, never
		// guessed from the data: a plain body may start like a
		// ciphertext. Rows written before outcome_sealed are judged by
		// their data (Open).
		open := keys.Open
		if sealedMark != nil {
			open = func(k ledger.Key, field string, data []byte) ([]byte, error) {
				return keys.OpenStored(k, field, data, *sealedMark)
			}
		}
		// Sealed headers are kept as one JSON string (the column is
		// jsonb); plain ones as the header object.
		var sealed []byte
		if json.Unmarshal(header, &sealed) == nil {
			h, err := open(rec.Key, "headers", sealed)
			if err != nil {
				return ledger.Record{}, meta{}, err
			}
			header = h
		}
		if err := json.Unmarshal(header, &o.Header); err != nil {
			return ledger.Record{}, meta{}, fmt.Errorf("%w: header: %v", ledger.ErrCorrupt, err)
		}
		if o.Header == nil {
			o.Header = http.Header{}
		}
		if !o.BodyOmitted {
			if len(body) > 0 {
				b, err := open(rec.Key, "body", body)
				if err != nil {
					return ledger.Record{}, meta{}, err
				}
				body = b
			}
			o.Body = body
			if o.Body == nil {
				o.Body = []byte{}
			}
		}
		rec.Outcome = o
	}
	return rec, m, nil
}

// norm gives every time the store returns one representation, Unix
// microseconds (PostgreSQL's precision) in the local zone, so records
// compare equal however they were read.
func norm(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return time.UnixMicro(t.UnixMicro())
}
