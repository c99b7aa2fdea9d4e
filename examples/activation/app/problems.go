package app

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/retrybudget/retrybudget"
)

// typeBase starts the service's own problem type URIs; each fragment is a
// heading of the README's "Problem types" section.
const typeBase = "https://github.com/retrybudget/retrybudget/tree/main/examples/activation#"

// The service's own problem types. The idempotency middleware adds its own
// (idempotency.TypePending and the others).
const (
	// typeUnauthorized: 401, no or unknown bearer token.
	typeUnauthorized = typeBase + "unauthorized"
	// typeInvalidRequest: 400, the body is not the activation JSON.
	typeInvalidRequest = typeBase + "invalid-request"
	// typeInvalidActivation: 422, a field is missing or out of range.
	typeInvalidActivation = typeBase + "invalid-activation"
	// typeNotFound: 404, no such activation for this tenant.
	typeNotFound = typeBase + "not-found"
	// typeStoreUnavailable: 503 with Retry-After, the activation store
	// could not be written or read.
	typeStoreUnavailable = typeBase + "store-unavailable"
	// TypeDestinationRateLimited: 503 with Retry-After, the destination
	// answered 429 (or 503) and asked for longer than the service waits.
	TypeDestinationRateLimited = typeBase + "destination-rate-limited"
	// typeDestinationFailed: 502, the destination failed or could not be
	// reached.
	typeDestinationFailed = typeBase + "destination-failed"
)

// writeProblem sends an RFC 9457 problem. retryAfter, when positive, is
// sent as Retry-After in whole seconds, rounded up (RFC 9110 §10.2.3).
func writeProblem(w http.ResponseWriter, status int, typ, title, detail string, retryAfter time.Duration) {
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Cache-Control", "no-store")
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.FormatInt(int64((retryAfter+time.Second-1)/time.Second), 10))
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(retrybudget.Problem{Type: typ, Title: title, Status: status, Detail: detail})
}
