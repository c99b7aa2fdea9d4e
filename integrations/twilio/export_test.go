package twilio

import (
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// NewReconcilerAt is NewReconciler on the clock now, for tests.
func NewReconcilerAt(cfg ReconcilerConfig, now func() time.Time) (ledger.Reconciler, error) {
	return newReconciler(cfg, now)
}
