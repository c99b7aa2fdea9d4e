package pgledger

import (
	"strings"
	"testing"
)

// TestReservationDecidesOnce pins the shape that keeps the reservation
// cheap for the server, which compiles every expression of a statement at
// each execution's start: the takeover writes the verdict and the
// effective state once per decision (the WHERE's and the SET's), never
// pasted into each column the grant sets, and the creation, an action's
// first reservation, carries no decision at all.
func TestReservationDecidesOnce(t *testing.T) {
	if n := strings.Count(takeoverSQL, decision); n != 2 {
		t.Errorf("takeoverSQL holds the decision %d times; want 2 (the WHERE and the SET)", n)
	}
	if n := strings.Count(takeoverSQL, "THEN 'reconcile'"); n != 2 {
		t.Errorf("takeoverSQL holds the verdict %d times; want 2", n)
	}
	if n := strings.Count(takeoverSQL, effState); n != 2 {
		t.Errorf("takeoverSQL holds the effective state %d times; want 2", n)
	}
	if strings.Contains(createSQL, decision) || !strings.Contains(createSQL, "ON CONFLICT (id) DO NOTHING") {
		t.Errorf("createSQL carries the decision or takes a row over; want a plain creation:\n%s", createSQL)
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
