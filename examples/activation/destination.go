package main

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
	// limitedCampaign is always answered 429 with Retry-After: 30, as a
	// destination whose quota for the tenant is spent.
	limitedCampaign = "campaign_limited"
	// slowAudience is synced only after the destination's hold, so a
	// second request can arrive while the first is still running.
	slowAudience = "audience_slow"
)

// destination is a fake ad-platform API, served on loopback, that syncs a
// campaign to an audience. Like a real provider it deduplicates by
// Idempotency-Key: a repeated key gets the first sync back, not a second
// one.
type destination struct {
	// hold runs before a sync of slowAudience; it returns early when ctx
	// ends. Tests make it wait on a channel, the command on a timer.
	hold   func(ctx context.Context)
	logger *slog.Logger

	mu       sync.Mutex        // guards the fields below
	syncs    map[string]string // sync ID by Idempotency-Key
	requests int               // requests received, duplicates included
}

// newDestination returns a destination with no syncs.
func newDestination(hold func(context.Context), logger *slog.Logger) *destination {
	return &destination{hold: hold, logger: logger, syncs: map[string]string{}}
}

// syncRequest is the body the service sends.
type syncRequest struct {
	ActivationID string `json:"activation_id"`
	CampaignID   string `json:"campaign_id"`
	Revision     int    `json:"revision"`
}

// ServeHTTP serves POST /v1/audiences/{audience}/syncs.
func (d *destination) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	audience := r.PathValue("audience")
	key := r.Header.Get("Idempotency-Key")
	var req syncRequest
	if r.Method != http.MethodPost || audience == "" || key == "" || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, "bad sync request", http.StatusBadRequest)
		return
	}
	d.mu.Lock()
	d.requests++
	d.mu.Unlock()

	if req.CampaignID == limitedCampaign {
		d.logger.Info("destination: 429, quota spent", "campaign", req.CampaignID, "key", key)
		w.Header().Set("Retry-After", "30")
		http.Error(w, "rate limited", http.StatusTooManyRequests)
		return
	}
	if audience == slowAudience {
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

// counts returns the requests received and the syncs made.
func (d *destination) counts() (requests, syncs int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.requests, len(d.syncs)
}
