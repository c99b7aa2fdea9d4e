package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
)

// Campaign and audience IDs the fake destination treats specially, so the
// README can show each case with curl against one running service.
const (
	// LimitedCampaign is always answered 429 with Retry-After: 30, as a
	// destination whose quota for the tenant is spent.
	LimitedCampaign = "campaign_limited"
	// SlowAudience is synced only after the destination's hold, so a
	// second request can arrive while the first is still running.
	SlowAudience = "audience_slow"
)

// Destination is a fake ad-platform API that syncs a campaign to an
// audience. Like a real provider it deduplicates by Idempotency-Key: a
// repeated key gets the first sync back, not a second one. Its syncs are
// the service's effects, counted here, in one place, whichever instance
// of the service asked (GET /v1/stats).
type Destination struct {
	// hold runs before a sync of SlowAudience; it returns early when ctx
	// ends. Tests make it wait on a channel, the command on a timer.
	hold   func(ctx context.Context)
	logger *slog.Logger

	mu       sync.Mutex        // guards the fields below
	syncs    map[string]string // sync ID by Idempotency-Key
	requests int               // requests received, duplicates included
}

// NewDestination returns a destination with no syncs. hold runs before a
// sync of SlowAudience; nil means no hold. A nil logger is silent.
func NewDestination(hold func(context.Context), logger *slog.Logger) *Destination {
	if hold == nil {
		hold = func(context.Context) {}
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Destination{hold: hold, logger: logger, syncs: map[string]string{}}
}

// Handler returns the destination's routes: POST
// /v1/audiences/{audience}/syncs and GET /v1/stats.
func (d *Destination) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/audiences/{audience}/syncs", d.sync)
	mux.HandleFunc("GET /v1/stats", d.stats)
	return mux
}

// syncRequest is the body the service sends.
type syncRequest struct {
	ActivationID string `json:"activation_id"`
	CampaignID   string `json:"campaign_id"`
	Revision     int    `json:"revision"`
}

// sync serves POST /v1/audiences/{audience}/syncs.
func (d *Destination) sync(w http.ResponseWriter, r *http.Request) {
	audience := r.PathValue("audience")
	key := r.Header.Get("Idempotency-Key")
	var req syncRequest
	if audience == "" || key == "" || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, "bad sync request", http.StatusBadRequest)
		return
	}
	d.mu.Lock()
	d.requests++
	d.mu.Unlock()

	if req.CampaignID == LimitedCampaign {
		d.logger.Info("destination: 429, quota spent", "campaign", req.CampaignID, "key", key)
		w.Header().Set("Retry-After", "30")
		http.Error(w, "rate limited", http.StatusTooManyRequests)
		return
	}
	if audience == SlowAudience {
		d.hold(r.Context())
	}

	d.mu.Lock()
	id, dup := d.syncs[key]
	if !dup {
		id = fmt.Sprintf("sync_%d", len(d.syncs)+1)
		d.syncs[key] = id
	}
	d.mu.Unlock()
	d.logger.Info("destination: sync", "sync_id", id, "duplicate_key", dup, "campaign", req.CampaignID, "audience", audience, "key", key)
	w.Header().Set("Content-Type", "application/json")
	if !dup {
		w.WriteHeader(http.StatusCreated)
	}
	_ = json.NewEncoder(w).Encode(map[string]string{"sync_id": id})
}

// Stats is the answer of GET /v1/stats.
type Stats struct {
	// Requests counts the sync requests received, duplicates and refusals
	// included.
	Requests int `json:"requests"`
	// Syncs counts the syncs made: the effects, one per Idempotency-Key.
	Syncs int `json:"syncs"`
}

// Stats returns the requests received and the syncs made.
func (d *Destination) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return Stats{Requests: d.requests, Syncs: len(d.syncs)}
}

// Synced reports whether the destination made a sync under key.
func (d *Destination) Synced(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.syncs[key]
	return ok
}

// stats serves GET /v1/stats.
func (d *Destination) stats(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, d.Stats())
}
