package idempotency

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/ledger"
)

// typeBase starts every problem type URI of the middleware. Each resolves
// to the documentation of its constant, which is what RFC 9457 §3.1.1 asks
// a type URI to lead a human to.
const typeBase = "https://pkg.go.dev/github.com/retrybudget/retrybudget/idempotency#"

// The problem types the middleware answers with, as the "type" member of an
// RFC 9457 application/problem+json body. Clients should branch on these
// URIs, not on the title or detail text.
const (
	// TypeMissingKey is the 400 answer to a request of a guarded method
	// without the key header, when Config.KeyOptional is false. Nothing
	// ran; send the request again with a key.
	TypeMissingKey = typeBase + "TypeMissingKey"
	// TypeMalformedKey is the 400 answer to a key header ParseKey rejects.
	// Nothing ran; fix the key.
	TypeMalformedKey = typeBase + "TypeMalformedKey"
	// TypeBodyTooLarge is the 413 answer to a request body longer than
	// Config.MaxRequestBody, which the middleware must read whole to
	// fingerprint the request. Nothing ran.
	TypeBodyTooLarge = typeBase + "TypeBodyTooLarge"
	// TypeBodyUnreadable is the 400 answer to a request body that could
	// not be read to its end (the client went away or sent a broken
	// chunked body). Nothing ran.
	TypeBodyUnreadable = typeBase + "TypeBodyUnreadable"
	// TypeNoTenant is the answer to a guarded request without a tenant:
	// 403 when Config.Tenant returned "" for it (the caller is not
	// identified), 500 when Config.Tenant is nil (the service is
	// misconfigured). Nothing ran: keys are scoped by tenant, and an empty
	// tenant would be shared by every unidentified caller.
	TypeNoTenant = typeBase + "TypeNoTenant"
	// TypePending is the 409 answer to a request whose key is in progress
	// in another request. Its Retry-After header (RFC 9110 §10.2.3) says
	// when the running request's lease ends; try again then, with the same
	// key, and get its response replayed. Nothing ran for this request:
	// either the handler did not run, or it found a step of the action
	// (WithStep) held by another server and did not call it, and its
	// answer was dropped (see Config.Lease).
	TypePending = typeBase + "TypePending"
	// TypeConflict is the 422 answer to a key reused for a different
	// request: another method, path, query, fingerprinted header or body
	// than the request that first used it. Nothing ran; use a new key for a
	// new request.
	TypeConflict = typeBase + "TypeConflict"
	// TypeUncertain is the 409 answer to a key whose first request may
	// have had its effect but ended without a response to replay: the
	// server running it died, or the handler failed after marking an effect
	// (MarkEffect). Nothing ran for this request, and retrying will not
	// change the answer until an operator settles the action; do not
	// switch to a new key, which could repeat the effect.
	TypeUncertain = typeBase + "TypeUncertain"
	// TypeLedgerFull is the answer given when the ledger store has no room
	// for a new key (ledger.ErrFull): 503 when the store is full, 429 when
	// this tenant holds its quota of keys (ledger.ErrTenantFull), both with
	// a Retry-After of when the store can next make room (a minute when it
	// cannot tell). Nothing ran, and no other key was
	// forgotten to make room.
	TypeLedgerFull = typeBase + "TypeLedgerFull"
	// TypeBusy is the 503 answer given at once, with Retry-After: 1, when
	// Config.Atomic is set and the store holds as many action
	// transactions open as it allows, in all or for the request's tenant
	// (ledger.ErrBusy): nothing ran, and
	// the same request may be sent again. The store itself answered; it is
	// not TypeLedgerUnavailable.
	TypeBusy = typeBase + "TypeBusy"
	// TypeLedgerUnavailable is the 503 answer given when the ledger store
	// could not be read or written before the handler ran, with
	// Retry-After: 1. Nothing ran: the middleware fails closed rather than
	// run a request it cannot deduplicate.
	TypeLedgerUnavailable = typeBase + "TypeLedgerUnavailable"
)

// problem is one problem details answer.
type problem struct {
	status int
	typ    string
	title  string
	detail string
	// retryAfter, when positive, is sent as Retry-After in whole seconds,
	// rounded up so the client never comes back before the time.
	retryAfter time.Duration
}

// write sends p. Headers already set on w by outer middleware stay, except
// the ones a problem body must replace.
func (p problem) write(w http.ResponseWriter) {
	h := w.Header()
	for _, n := range [...]string{"Content-Encoding", "Content-Length", "Etag", "Last-Modified", "Location"} {
		h.Del(n)
	}
	h.Set("Content-Type", "application/problem+json")
	// A problem describes this attempt, not the resource: never reuse it.
	h.Set("Cache-Control", "no-store")
	if p.retryAfter > 0 {
		h.Set("Retry-After", strconv.FormatInt(retryAfterSeconds(p.retryAfter), 10))
	}
	body, _ := json.Marshal(retrybudget.Problem{Type: p.typ, Title: p.title, Status: p.status, Detail: p.detail})
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(p.status)
	_, _ = w.Write(append(body, '\n'))
}

// retryAfterSeconds converts d to RFC 9110 §10.2.3 delta-seconds, a
// non-negative integer, rounding up and never below one second: "0" would
// invite an immediate retry that is bound to find the same state.
func retryAfterSeconds(d time.Duration) int64 {
	s := int64((d + time.Second - 1) / time.Second)
	return max(s, 1)
}

// busy is the answer when an Atomic store has no free transaction slot.
func busy() problem {
	return problem{status: http.StatusServiceUnavailable, typ: TypeBusy, title: "Server busy",
		detail: "The request was not run because the server is running as many requests as it can; send it again after Retry-After.", retryAfter: time.Second}
}

// unavailable is the answer when the store cannot be used.
func unavailable() problem {
	return problem{status: http.StatusServiceUnavailable, typ: TypeLedgerUnavailable, title: "Idempotency ledger unavailable",
		detail: "The request was not run because its idempotency key could not be checked.", retryAfter: time.Second}
}

// fullRetryAfter is the Retry-After of TypeLedgerFull: room comes back as
// records expire, which the middleware cannot predict.
const fullRetryAfter = time.Minute

// full is the answer when the store has no room for a new key.
//
// Its Retry-After is when the store says a record could be dropped to make
// room (a ledger.Error's RetryAfter), else fullRetryAfter: the store's
// retention is the deduplication window, so room comes back only as
// records reach it, never by forgetting one early.
func full(status int, err error) problem {
	retryAfter := fullRetryAfter
	var le *ledger.Error
	if errors.As(err, &le) && le.RetryAfter > 0 {
		retryAfter = le.RetryAfter
	}
	return problem{status: status, typ: TypeLedgerFull, title: "Idempotency ledger full",
		detail: "The request was not run because no room is left to record its idempotency key.", retryAfter: retryAfter}
}

// tooLarge is the answer to a request body over limit.
func tooLarge(limit int64) *problem {
	return &problem{status: http.StatusRequestEntityTooLarge, typ: TypeBodyTooLarge, title: "Request body too large",
		detail: fmt.Sprintf("A request with an idempotency key may carry at most %d bytes.", limit)}
}
