package app

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/idempotency"
	"github.com/retrybudget/retrybudget/rateheader"
)

// Activation is one campaign revision activated on an audience.
type Activation struct {
	ID         string `json:"activation_id"`
	State      string `json:"state"`
	CampaignID string `json:"campaign_id"`
	Revision   int    `json:"revision"`
	AudienceID string `json:"audience_id"`
	SyncID     string `json:"destination_sync_id"`
}

// activationRequest is the body of POST /api/v1/campaign-activations.
type activationRequest struct {
	CampaignID string `json:"campaign_id"`
	Revision   int    `json:"revision"`
	AudienceID string `json:"audience_id"`
}

// service activates campaigns by syncing them to the destination.
type service struct {
	client      *http.Client // a retrybudget.Transport sharing the ledger
	destination string       // the destination's base URL
	activations Activations
}

// activate serves POST /api/v1/campaign-activations behind the idempotency
// middleware: it runs once per tenant and Idempotency-Key, and its answer is
// replayed to every retry.
func (s *service) activate(w http.ResponseWriter, r *http.Request) {
	var req activationRequest
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeProblem(w, http.StatusBadRequest, typeInvalidRequest, "Invalid request", "The body must be an activation JSON object.", 0)
		return
	}
	if req.CampaignID == "" || !validAudience(req.AudienceID) || req.Revision < 1 {
		writeProblem(w, http.StatusUnprocessableEntity, typeInvalidActivation, "Invalid activation",
			"campaign_id and audience_id are required, audience_id is 1 to 64 letters, digits, '_' or '-', and revision must be at least 1.", 0)
		return
	}
	inbound, _ := idempotency.InboundFrom(r.Context())
	// The ID is a function of the action, so a run repeated after a
	// failure (Config.RerunUncertain) creates the same activation, not a
	// second one.
	sum := sha256.Sum256([]byte(inbound.IdempotencyKey()))
	a := Activation{ID: "act_" + hex.EncodeToString(sum[:8]), State: "completed",
		CampaignID: req.CampaignID, Revision: req.Revision, AudienceID: req.AudienceID}

	syncID, retryAfter, err := s.sync(r, a)
	switch {
	case errors.Is(err, errRateLimited):
		writeProblem(w, http.StatusServiceUnavailable, TypeDestinationRateLimited, "Destination rate limited",
			"The destination is rate limiting this tenant; retry with the same Idempotency-Key after Retry-After.", retryAfter)
		return
	case err != nil:
		writeProblem(w, http.StatusBadGateway, typeDestinationFailed, "Destination failed",
			"The destination could not sync the audience; retry with the same Idempotency-Key.", retryAfter)
		return
	}
	a.SyncID = syncID
	// With Config.Atomic this write is in the action's transaction: it
	// commits together with the completed record, or not at all.
	if err := s.activations.Put(r.Context(), inbound.Tenant, a); err != nil {
		writeProblem(w, http.StatusServiceUnavailable, typeStoreUnavailable, "Activation store unavailable",
			"The activation could not be stored; retry with the same Idempotency-Key.", time.Second)
		return
	}

	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", activationsPath+"/"+a.ID)
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(a)
}

// errRateLimited reports a destination that answered 429 or 503.
var errRateLimited = errors.New("activation: destination rate limited")

// sync asks the destination to sync a, under the action derived from the
// inbound one for the "destination" step: the Transport sends the same
// provider key on every run of this action, and replays the destination's
// answer from the shared ledger instead of calling it twice. It returns the
// sync ID, or an error with the time to wait before retrying, if known.
func (s *service) sync(r *http.Request, a Activation) (string, time.Duration, error) {
	ctx, err := idempotency.WithStep(r.Context(), "destination")
	if err != nil {
		return "", 0, err
	}
	body, _ := json.Marshal(syncRequest{ActivationID: a.ID, CampaignID: a.CampaignID, Revision: a.Revision})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.destination+"/v1/audiences/"+url.PathEscape(a.AudienceID)+"/syncs", bytes.NewReader(body))
	if err != nil {
		return "", 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	// The sync is this handler's outside effect: mark it before it may
	// happen, and do not send when the mark could not be written (with
	// Atomic, a server that died after an unmarked sync would leave the
	// action failed, to run again). The destination's key handling makes
	// a repeat safe, which is why the middleware runs with RerunUncertain.
	if err := idempotency.MarkEffect(r.Context()); err != nil {
		return "", 0, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		var rerr *retrybudget.Error
		if errors.As(err, &rerr) {
			return "", until(rerr.RetryAt), err
		}
		return "", 0, err
	}
	defer resp.Body.Close()
	out, _ := retrybudget.OutcomeOf(resp)
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable:
		wait := until(out.RetryAt)
		if wait == 0 {
			if at, ok := rateheader.ParseRetryAfter(resp.Header, time.Now()); ok {
				wait = until(at)
			}
		}
		return "", wait, errRateLimited
	case resp.StatusCode/100 != 2:
		return "", until(out.RetryAt), errors.New("activation: destination answered " + strconv.Itoa(resp.StatusCode))
	}
	var sr struct {
		SyncID string `json:"sync_id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&sr); err != nil {
		return "", 0, err
	}
	return sr.SyncID, 0, nil
}

// get serves GET /api/v1/campaign-activations/{id}, the Location of a
// created activation.
func (s *service) get(w http.ResponseWriter, r *http.Request) {
	a, err := s.activations.Get(r.Context(), tenantOf(r), r.PathValue("id"))
	switch {
	case errors.Is(err, ErrNotFound):
		writeProblem(w, http.StatusNotFound, typeNotFound, "Not found", "No such activation for this tenant.", 0)
		return
	case err != nil:
		writeProblem(w, http.StatusServiceUnavailable, typeStoreUnavailable, "Activation store unavailable",
			"The activation store could not be read; try again.", time.Second)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(a)
}

// until returns the time left before t, zero when t is zero or past.
func until(t time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	return max(time.Until(t), 0)
}

// validAudience reports whether id may name an audience: 1 to 64 ASCII
// letters, digits, '_' or '-'. It goes into the destination's URL path,
// where a tenant's "../" or "?" would choose another endpoint.
func validAudience(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
