package paypal

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/plutov/paypal/v4"

	"github.com/retrybudget/retrybudget/integrations"
	"github.com/retrybudget/retrybudget/ledger"
)

// StatusChange is what an action on one of PayPal's unkeyed subscription
// paths (/v1/billing/subscriptions/{id}/activate, /suspend, /cancel) asks
// for: subscription ID moved to status Want (paypal.SubscriptionStatusActive,
// SubscriptionStatusSuspended or SubscriptionStatusCancelled).
type StatusChange struct {
	ID   string
	Want paypal.SubscriptionStatus
}

// SubscriptionReconcilerConfig configures NewSubscriptionReconciler.
// Client and Change are required.
type SubscriptionReconcilerConfig struct {
	// Client reads subscriptions (NewClient; GETs change nothing).
	Client *paypal.Client
	// Change returns the change an action asks for, rebuilt from its key
	// as the worker builds it from the job.
	Change func(ctx context.Context, k ledger.Key) (StatusChange, error)
	// Settle is how long after a send PayPal may still apply it (see
	// integrations.LookupReconciler). Zero means ledger.DefaultLease.
	Settle time.Duration
	// Skew is how far PayPal's clock and the store's may differ. Zero
	// means one minute.
	Skew time.Duration
}

// ErrReconcilerConfig is the error NewSubscriptionReconciler returns for a
// config that lacks a required field.
var ErrReconcilerConfig = errors.New("paypal: invalid reconciler config")

// NewSubscriptionReconciler returns a ledger.Reconciler for PayPal's
// subscription status changes, which take no PayPal-Request-Id: it reads
// the subscription, and the change is found when its status is the one
// asked for and changed (status_update_time) no earlier than the action's
// record, less Skew. Found completes the action with PayPal's answer to
// the change, 204 No Content; not found fails it, so it is sent again, only
// after the settle time; a subscription already in that status since
// before the action leaves it uncertain for an operator
// (integrations.LookupReconciler). Orders' confirm-payment-source and
// tracking, PayPal's other unkeyed paths, have no reconciler: their
// effect shows in no field a lookup could match exactly.
func NewSubscriptionReconciler(cfg SubscriptionReconcilerConfig) (ledger.Reconciler, error) {
	return newSubscriptionReconciler(cfg, time.Now)
}

// newSubscriptionReconciler is NewSubscriptionReconciler reading the
// settle time's clock from now.
func newSubscriptionReconciler(cfg SubscriptionReconcilerConfig, now func() time.Time) (ledger.Reconciler, error) {
	switch {
	case cfg.Client == nil:
		return nil, fmt.Errorf("%w: Client is required (rbpaypal.NewClient for the app that changed the subscription)", ErrReconcilerConfig)
	case cfg.Change == nil:
		return nil, fmt.Errorf("%w: Change is required: a function that rebuilds an action's subscription ID and wanted status from its Key", ErrReconcilerConfig)
	}
	if cfg.Skew <= 0 {
		cfg.Skew = time.Minute
	}
	find := func(ctx context.Context, r ledger.Record) ([]ledger.Outcome, error) {
		ch, err := cfg.Change(ctx, r.Key)
		if err != nil {
			return nil, err
		}
		if ch.ID == "" || ch.Want == "" {
			return nil, errors.New("paypal: the action's StatusChange names no subscription or status")
		}
		sub, err := cfg.Client.GetSubscriptionDetails(ctx, ch.ID)
		if err != nil {
			return nil, err
		}
		if sub.SubscriptionStatus != ch.Want {
			return nil, nil
		}
		if sub.StatusUpdateTime.Before(r.CreatedAt.Add(-cfg.Skew)) {
			return nil, fmt.Errorf("paypal: subscription already %s since %s, before the action began", ch.Want, sub.StatusUpdateTime.UTC().Format(time.RFC3339))
		}
		return []ledger.Outcome{{Status: http.StatusNoContent}}, nil
	}
	return integrations.LookupReconciler(find, cfg.Settle, now), nil
}
