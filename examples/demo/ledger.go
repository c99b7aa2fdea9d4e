package main

import (
	"fmt"
	"sync"
)

// charge is the body of POST /v1/charges.
type charge struct {
	Tenant string `json:"tenant"`
	Order  string `json:"order"`
	Amount int    `json:"amount"` // in cents; must be positive
}

// receipt is the provider's answer to an applied charge.
type receipt struct {
	ID     string `json:"id"`
	Order  string `json:"order"`
	Amount int    `json:"amount"`
}

// ledger is the provider's record of applied charges. It deduplicates by
// idempotency key, as Stripe-like APIs do, and separately counts how often
// each order was charged: a client that sent a fresh key on a retry would
// slip past the key check and show up here as a duplicate effect.
type ledger struct {
	mu sync.Mutex // guards every field below

	byKey      map[string]receipt // idempotency key → stored answer
	perOrder   map[string]int     // order → times its effect was applied
	applied    int                // effects applied in total
	duplicates int                // effects applied to an already charged order
}

func newLedger() *ledger {
	return &ledger{byKey: make(map[string]receipt), perOrder: make(map[string]int)}
}

// apply charges c unless a charge with the same key was applied before, in
// which case it returns the stored receipt with replayed set. Lookup and
// insertion happen under one lock, so two concurrent requests with one key
// cannot both apply. An empty key is not deduplicated at all.
func (l *ledger) apply(key string, c charge) (r receipt, replayed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r, ok := l.byKey[key]; ok && key != "" {
		return r, true
	}
	l.applied++
	if l.perOrder[c.Order] > 0 {
		l.duplicates++
	}
	l.perOrder[c.Order]++
	r = receipt{ID: fmt.Sprintf("ch_%06d", l.applied), Order: c.Order, Amount: c.Amount}
	if key != "" {
		l.byKey[key] = r
	}
	return r, false
}

// ledgerTotals is a snapshot of a ledger's counters.
type ledgerTotals struct {
	applied    int
	duplicates int
	perOrder   map[string]int
}

// totals returns a snapshot of the counters.
func (l *ledger) totals() ledgerTotals {
	l.mu.Lock()
	defer l.mu.Unlock()
	per := make(map[string]int, len(l.perOrder))
	for k, v := range l.perOrder {
		per[k] = v
	}
	return ledgerTotals{applied: l.applied, duplicates: l.duplicates, perOrder: per}
}
