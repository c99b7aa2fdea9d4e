package app

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/retrybudget/retrybudget/idempotency"
	"github.com/retrybudget/retrybudget/ledger"
)

// adminTimeout bounds each ledger call of the admin endpoints.
const adminTimeout = 2 * time.Second

// admin serves the ledger's records to an operator: its routes accept only
// an operator's credential (demoOperatorTokens), never a tenant's.
type admin struct {
	store ledger.Store
}

// RecordView is how the admin endpoints show a ledger record: its state
// and history, never its stored response body or fingerprint.
type RecordView struct {
	Tenant     string        `json:"tenant"`
	Operation  string        `json:"operation"`
	State      string        `json:"state"`
	Owner      string        `json:"owner,omitempty"`
	Sending    bool          `json:"sending"`
	LeaseUntil *time.Time    `json:"lease_until,omitempty"`
	Status     int           `json:"status,omitempty"` // the stored response's, once completed
	Reason     string        `json:"reason,omitempty"`
	Attempts   []AttemptView `json:"attempts"`
	CreatedAt  time.Time     `json:"created_at"`
	ExpiresAt  time.Time     `json:"expires_at"`
}

// AttemptView is one entry of a record's history (ledger.Attempt): an
// ownership grant or a send.
type AttemptView struct {
	N     int       `json:"n"`
	At    time.Time `json:"at"`
	Class string    `json:"class"`
	Owner string    `json:"owner,omitempty"`
}

// ActionView is the answer of GET /admin/actions/{key}: the records of the
// inbound action under that Idempotency-Key and of its destination step.
// A record the ledger does not hold (never created, or expired) is absent.
type ActionView struct {
	Inbound     *RecordView `json:"inbound"`
	Destination *RecordView `json:"destination"`
}

// action serves GET /admin/tenants/{tenant}/actions/{key}.
func (a *admin) action(w http.ResponseWriter, r *http.Request) {
	inbound := ledger.Key{Tenant: r.PathValue("tenant"), Operation: "POST " + activationsPath, Key: r.PathValue("key")}
	if inbound.Tenant == "" || inbound.Key == "" {
		writeProblem(w, http.StatusBadRequest, typeInvalidRequest, "Invalid request", "The key is not a valid Idempotency-Key.", 0)
		return
	}
	var v ActionView
	// The step derives from the inbound record's generation (its
	// creation time): without an inbound record there is no step to show.
	rec, ok := a.get(w, r, inbound)
	if !ok {
		return
	}
	if rec != nil {
		v.Inbound = view(*rec)
		step, _ := idempotency.Outbound(inbound, rec.CreatedAt, "destination")
		if rec, ok = a.get(w, r, step); !ok {
			return
		}
		if rec != nil {
			v.Destination = view(*rec)
		}
	}
	writeJSON(w, v)
}

// get reads k's record: nil when the ledger holds none, and false after
// answering 503 when it could not be read.
func (a *admin) get(w http.ResponseWriter, r *http.Request, k ledger.Key) (*ledger.Record, bool) {
	ctx, cancel := context.WithTimeout(r.Context(), adminTimeout)
	defer cancel()
	rec, err := a.store.Get(ctx, k)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return nil, true
	case err != nil:
		writeProblem(w, http.StatusServiceUnavailable, typeStoreUnavailable, "Ledger unavailable", "The ledger could not be read; try again.", time.Second)
		return nil, false
	}
	return &rec, true
}

// maxStuck bounds what one GET /admin/stuck lists (and reads): the
// oldest stuck actions first, as ledger.Store.Sweep orders them.
const maxStuck = 100

// stuck serves GET /admin/stuck: the actions in progress whose lease ended
// and those left uncertain (ledger.Store.Sweep), at most maxStuck of them.
func (a *admin) stuck(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), adminTimeout)
	defer cancel()
	recs, err := a.store.Sweep(ctx, maxStuck)
	if err != nil {
		writeProblem(w, http.StatusServiceUnavailable, typeStoreUnavailable, "Ledger unavailable", "The ledger could not be read; try again.", time.Second)
		return
	}
	out := []*RecordView{}
	for _, rec := range recs {
		out = append(out, view(rec))
	}
	writeJSON(w, out)
}

// view returns rec as the admin endpoints show it.
func view(rec ledger.Record) *RecordView {
	v := &RecordView{Tenant: rec.Key.Tenant, Operation: rec.Key.Operation, State: rec.State.String(), Owner: rec.Owner, Sending: rec.Sending,
		Reason: rec.Reason, Attempts: []AttemptView{}, CreatedAt: rec.CreatedAt, ExpiresAt: rec.ExpiresAt}
	if !rec.LeaseUntil.IsZero() {
		v.LeaseUntil = &rec.LeaseUntil
	}
	if rec.Outcome != nil {
		v.Status = rec.Outcome.Status
	}
	for _, at := range rec.Attempts {
		v.Attempts = append(v.Attempts, AttemptView{N: at.N, At: at.At, Class: at.Class, Owner: at.Owner})
	}
	return v
}

// writeJSON sends v as a 200 JSON answer.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}
