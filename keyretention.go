package retrybudget

import (
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// keyLapsed reports whether the provider has forgotten the key of the
// action recorded in rec by the time of the re-send just granted, when it
// keeps a key for retention (Config.KeyRetention; zero means no known
// limit). The age is read on the store's clock, from the action's creation
// (before its first send, so the age is never understated) to the newest
// entry of its history, the grant itself; a record without those times
// cannot prove the key is still kept, so it counts as lapsed.
func keyLapsed(retention time.Duration, rec ledger.Record) bool {
	if retention <= 0 {
		return false
	}
	if rec.CreatedAt.IsZero() || len(rec.Attempts) == 0 {
		return true
	}
	return rec.Attempts[len(rec.Attempts)-1].At.Sub(rec.CreatedAt) >= retention
}

// keyLapsedStep is the step the ledger gate adds to a decision's path when
// it turns a re-send into an uncertain outcome because the key lapsed.
func keyLapsedStep(retention time.Duration) string {
	return "the destination keeps a key for " + retention.String() +
		" (Config.KeyRetention) and the action is older: a re-send under the key would be new work, so do not send: outcome uncertain"
}
