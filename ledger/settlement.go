package ledger

import (
	"context"
	"fmt"
	"time"
)

// MaxSettlementText caps each text field of a Settlement, in bytes: every
// later read of the record carries them.
const MaxSettlementText = 1000

// Settlement is an operator's resolution of a held action, kept on the
// record as its audit trail (Record.Settlement): who settled it, why, when
// and as what. It must not contain secrets: consoles and "retrybudget
// ledger show" print it.
type Settlement struct {
	// By names the operator who settled the action. It must not be
	// empty.
	By string `json:"by"`
	// Reason says why, such as what the provider's dashboard showed. It
	// must not be empty.
	Reason string `json:"reason"`
	// At is when the store recorded the settlement, by the store's clock.
	// The store sets it; a value given to Settle is ignored.
	At time.Time `json:"at"`
	// Applied reports that the operator found the destination performed
	// the action (the record was completed with the provider's answer);
	// false means it was found never performed (the record failed without
	// effect, so the next request sends it again). The store sets it from
	// the Resolution's State; a value given is ignored.
	Applied bool `json:"applied"`
	// Reference is the provider's reference for an applied action, such
	// as a message or charge ID. Zero means none given.
	Reference string `json:"reference,omitempty"`
}

// Settler is a Store that keeps an operator's Settlement on the record.
// Memory, Redis and the PostgreSQL store implement it; Settle uses it for
// a Resolution that carries a Settlement.
type Settler interface {
	Store
	// Settle completes (StateCompleted, with res.Outcome) or fails without
	// effect (StateFailed) the action token holds, writing
	// res.Settlement with the store's clock in the same atomic step, so a
	// record is never settled without its trail, nor the trail written on
	// an action someone else settled. A stale token is ErrNotOwner and
	// changes nothing; any other State, or a Settlement that fails
	// Settlement.Validate, is ErrInvalid.
	Settle(ctx context.Context, k Key, token int64, res Resolution) error
}

// Validate returns an error wrapping ErrInvalid when s lacks By or
// Reason, or when a field is longer than MaxSettlementText.
func (s Settlement) Validate() error {
	switch {
	case s.By == "":
		return fmt.Errorf("%w: a settlement needs the operator's name (Settlement.By)", ErrInvalid)
	case s.Reason == "":
		return fmt.Errorf("%w: a settlement needs a reason (Settlement.Reason)", ErrInvalid)
	case len(s.By) > MaxSettlementText || len(s.Reason) > MaxSettlementText || len(s.Reference) > MaxSettlementText:
		return fmt.Errorf("%w: a settlement's name, reason and reference are each at most %d bytes", ErrInvalid, MaxSettlementText)
	}
	return nil
}

// settlementOf checks that res can be settled by an operator and returns
// its Settlement with Applied set from res.State.
func settlementOf(res Resolution) (Settlement, error) {
	if res.Settlement == nil {
		return Settlement{}, fmt.Errorf("%w: Settle needs Resolution.Settlement", ErrInvalid)
	}
	s := *res.Settlement
	if err := s.Validate(); err != nil {
		return Settlement{}, err
	}
	switch res.State {
	case StateCompleted:
		s.Applied = true
	case StateFailed:
		s.Applied = false
	default:
		return Settlement{}, fmt.Errorf("%w: an operator settles an action as completed or failed, not %s", ErrInvalid, res.State)
	}
	s.At = time.Time{}
	return s, nil
}

// CheckSettlement returns res's Settlement as a Settler stores it (Applied
// set from res.State, At zero for the store to set), or an error wrapping
// ErrInvalid, for a Settler implemented outside this package.
func CheckSettlement(res Resolution) (Settlement, error) { return settlementOf(res) }

// Settle implements Settler.
func (m *Memory) Settle(ctx context.Context, k Key, token int64, res Resolution) error {
	s, err := settlementOf(res)
	if err != nil {
		return err
	}
	var stored *Outcome
	if s.Applied {
		stored = m.cfg.storedOutcome(res.Outcome) // outside the lock: it hashes the body
	}
	now := m.now()
	return m.change(ctx, k, token, func(e *memoryEntry) {
		e.rec.LeaseUntil = time.Time{}
		if s.Applied {
			e.rec.State, e.rec.Outcome = StateCompleted, stored
		} else {
			e.rec.State, e.rec.Reason = StateFailed, s.Reason
		}
		s.At = now
		e.rec.Settlement = &s
	})
}
