package paypal

import (
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// NewSubscriptionReconcilerAt is NewSubscriptionReconciler on the clock
// now, for tests.
func NewSubscriptionReconcilerAt(cfg SubscriptionReconcilerConfig, now func() time.Time) (ledger.Reconciler, error) {
	return newSubscriptionReconciler(cfg, now)
}
