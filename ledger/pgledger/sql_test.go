package pgledger

import (
	"strings"
	"testing"
)

// TestReservationDecidesOnce pins the shape that keeps the reservation
// cheap for the server, which compiles every expression of a statement at
// each execution's start: the verdict and the effective state are written
// once per decision (the WHERE's and the SET's), never pasted into each
// column the grant sets.
func TestReservationDecidesOnce(t *testing.T) {
	for name, q := range map[string]string{"reserveSQL": reserveSQL, "reserveLimitedSQL": reserveLimitedSQL} {
		if n := strings.Count(q, decision); n != 2 {
			t.Errorf("%s holds the decision %d times; want 2 (the WHERE and the SET)", name, n)
		}
		if n := strings.Count(q, "THEN 'reconcile'"); n != 2 {
			t.Errorf("%s holds the verdict %d times; want 2", name, n)
		}
		if n := strings.Count(q, effState); n != 2 {
			t.Errorf("%s holds the effective state %d times; want 2", name, n)
		}
	}
}
