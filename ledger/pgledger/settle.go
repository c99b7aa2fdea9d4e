package pgledger

import (
	"context"

	"github.com/retrybudget/retrybudget/ledger"
)

// storedSettlement is a settlement as the settlement column keeps it.
type storedSettlement struct {
	By        string `json:"by"`
	Reason    string `json:"reason"`
	At        int64  `json:"at"` // Unix microseconds
	Applied   bool   `json:"applied"`
	Reference string `json:"reference"`
}

// settlementJSON builds the settlement column from the operator's name,
// reason and reference parameters, its time by the database's clock.
func settlementJSON(by, reason, reference, applied string) string {
	return sprintf(`jsonb_build_object('by', %s::text, 'reason', %s::text,
  'at', (extract(epoch FROM now()) * 1000000)::bigint, 'applied', %s, 'reference', %s::text)`, by, reason, applied, reference)
}

// settleCompletedSQL is completeSQL with an operator's settlement:
// $10 by, $11 reason, $12 reference.
var settleCompletedSQL = `UPDATE {{table}} SET state = 'completed', lease_until = NULL,
  status = $3, header = $4, body = $5, body_hash = $6, body_len = $7, body_omitted = $8,
  outcome_sealed = $9, settlement = ` + settlementJSON("$10", "$11", "$12", "true") + `
WHERE ` + fenced

// settleFailedSQL fails the action without effect with an operator's
// settlement: $3 by, $4 reason (also the record's reason), $5 reference.
var settleFailedSQL = `UPDATE {{table}} SET state = 'failed', lease_until = NULL, reason = $4,
  settlement = ` + settlementJSON("$3", "$4", "$5", "false") + `
WHERE ` + fenced

// Settle implements ledger.Settler with one fenced statement, which
// writes the outcome or the failure and the settlement column together.
func (s *Store) Settle(ctx context.Context, k ledger.Key, token int64, res ledger.Resolution) error {
	a, err := ledger.CheckSettlement(res)
	if err != nil {
		return err
	}
	if !a.Applied {
		return s.fencedExec(ctx, "settleFailed", k, token, a.By, a.Reason, a.Reference)
	}
	args, err := s.outcomeArgs(k, res.Outcome)
	if err != nil {
		return err
	}
	// A settlement records no send: the outcome's own columns only.
	return s.fencedExec(ctx, "settleCompleted", k, token, append(args, a.By, a.Reason, a.Reference)...)
}

var _ ledger.Settler = (*Store)(nil)
