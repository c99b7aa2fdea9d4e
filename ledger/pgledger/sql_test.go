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
	for name, q := range map[string]string{"takeoverSQL": takeoverSQL} {
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

// TestHistorySlicedOnlyWhenFull pins the other shape the server's cost
// depends on: every write that adds to the history adds the entry alone
// while the history is below its limit, and slices it by jsonpath only in
// the branch for a full history.
func TestHistorySlicedOnlyWhenFull(t *testing.T) {
	for name, q := range map[string]string{"takeoverSQL": takeoverSQL, "attemptSQL": attemptSQL,
		"completeSQL": completeSQL, "failSQL": failSQL} {
		slices, inElse := strings.Count(q, "jsonb_path_query_array("), strings.Count(q, "ELSE jsonb_path_query_array(")
		if slices == 0 || slices != inElse {
			t.Errorf("%s slices the history %d times, %d of them in the full history's branch; want every slice there", name, slices, inElse)
		}
	}
}
