package twilio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	twilioapi "github.com/twilio/twilio-go/rest/api/v2010"

	"github.com/retrybudget/retrybudget/integrations"
	"github.com/retrybudget/retrybudget/ledger"
)

// ReconcilerConfig configures NewReconciler. AccountSID, AuthToken and
// Message are required.
type ReconcilerConfig struct {
	// AccountSID and AuthToken are the account's credentials, as for
	// NewClient.
	AccountSID, AuthToken string
	// BaseURL replaces Twilio's scheme and host, for tests; empty means
	// Twilio's own.
	BaseURL string
	// Transport carries the lookups (GETs, which change nothing). Nil
	// means http.DefaultTransport.
	Transport http.RoundTripper
	// Message returns the message an action sends, built as the worker
	// builds it from the job (its Key names the job): the lookup matches
	// its To, From (or MessagingServiceSid) and Body exactly.
	Message func(ctx context.Context, k ledger.Key) (*twilioapi.CreateMessageParams, error)
	// Settle is how long after a send Twilio may still create the message
	// (see integrations.LookupReconciler). Zero means ledger.DefaultLease.
	Settle time.Duration
	// MaxScan bounds the messages one lookup reads, newest first. Zero
	// means 200. A lookup that reaches it without passing the action's
	// creation cannot tell, and leaves the action uncertain.
	MaxScan int
	// Skew is how far Twilio's clock and the store's may differ: messages
	// created up to Skew before the action's record still match. Zero
	// means one minute.
	Skew time.Duration
}

// ErrReconcilerConfig is the error NewReconciler returns for a config that
// lacks a required field.
var ErrReconcilerConfig = errors.New("twilio: invalid reconciler config")

// NewReconciler returns a ledger.Reconciler for Twilio Messaging, which
// honours no idempotency key: it lists the account's messages to the
// action's recipient from its sender (Twilio's Message resource, read,
// never created) and matches the body exactly, among those created since
// the action's record (less Skew). One match completes the action with
// that message as its answer (a replay returns it, as a 201 would have);
// none fails it, so it is sent again, only after the settle time; several,
// or a scan that cannot reach back to the action, leave it uncertain for an
// operator (integrations.LookupReconciler).
func NewReconciler(cfg ReconcilerConfig) (ledger.Reconciler, error) {
	return newReconciler(cfg, time.Now)
}

// newReconciler is NewReconciler reading the settle time's clock from now.
func newReconciler(cfg ReconcilerConfig, now func() time.Time) (ledger.Reconciler, error) {
	switch {
	case cfg.AccountSID == "" || cfg.AuthToken == "":
		return nil, fmt.Errorf("%w: AccountSID and AuthToken are required (the account's SID, AC..., and its auth token)", ErrReconcilerConfig)
	case cfg.Message == nil:
		return nil, fmt.Errorf("%w: Message is required: a function that rebuilds an action's CreateMessageParams from its Key", ErrReconcilerConfig)
	}
	if cfg.MaxScan <= 0 {
		cfg.MaxScan = 200
	}
	if cfg.Skew <= 0 {
		cfg.Skew = time.Minute
	}
	if cfg.Transport == nil {
		cfg.Transport = http.DefaultTransport
	}
	find := func(ctx context.Context, r ledger.Record) ([]ledger.Outcome, error) {
		want, err := cfg.Message(ctx, r.Key)
		if err != nil {
			return nil, err
		}
		if want == nil || want.To == nil || want.Body == nil || (want.From == nil && want.MessagingServiceSid == nil) {
			return nil, errors.New("twilio: the action's message has no To, Body and From or MessagingServiceSid to match")
		}
		tc, err := NewClient(ctx, cfg.AccountSID, cfg.AuthToken, cfg.BaseURL, cfg.Transport)
		if err != nil {
			return nil, err
		}
		q := (&twilioapi.ListMessageParams{}).SetTo(*want.To).SetLimit(cfg.MaxScan).SetPageSize(min(cfg.MaxScan, 1000))
		if want.From != nil {
			q.SetFrom(*want.From)
		}
		msgs, err := tc.Api.ListMessage(q)
		if err != nil {
			return nil, err
		}
		since := r.CreatedAt.Add(-cfg.Skew)
		var found []ledger.Outcome
		reachedBack := len(msgs) < cfg.MaxScan
		for _, m := range msgs {
			created, ok := messageTime(m.DateCreated)
			if !ok {
				return nil, fmt.Errorf("twilio: message date_created %q is not RFC 2822", deref(m.DateCreated))
			}
			if created.Before(since) {
				reachedBack = true
				continue
			}
			if !sameMessage(want, m) {
				continue
			}
			body, err := json.Marshal(m)
			if err != nil {
				return nil, err
			}
			found = append(found, ledger.Outcome{Status: http.StatusCreated, Body: body,
				Header: map[string][]string{"Content-Type": {"application/json"}}})
		}
		if !reachedBack {
			return nil, fmt.Errorf("twilio: %d messages to the recipient since the action began; raise MaxScan", len(msgs))
		}
		return found, nil
	}
	return integrations.LookupReconciler(find, cfg.Settle, now), nil
}

// sameMessage reports whether m is the message want asks for: the same
// recipient, sender and text.
func sameMessage(want *twilioapi.CreateMessageParams, m twilioapi.ApiV2010Message) bool {
	if deref(m.To) != *want.To || deref(m.Body) != *want.Body {
		return false
	}
	if want.From != nil && deref(m.From) != *want.From {
		return false
	}
	return want.MessagingServiceSid == nil || deref(m.MessagingServiceSid) == *want.MessagingServiceSid
}

// messageTime parses Twilio's date_created, an RFC 2822 date
// ("Thu, 04 Dec 2026 15:00:00 +0000").
func messageTime(s *string) (time.Time, bool) {
	if s == nil {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC1123Z, *s)
	return t, err == nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
