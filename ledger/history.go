package ledger

// appendAttempt numbers a after the last entry of h, appends it, and
// drops the oldest entries beyond limit, so a record's history stays
// bounded however often its action is retried.
func appendAttempt(h []Attempt, limit int, a Attempt) []Attempt {
	a.N = 1
	if len(h) > 0 {
		a.N = h[len(h)-1].N + 1
	}
	h = append(h, a)
	if over := len(h) - limit; over > 0 {
		h = append(h[:0:0], h[over:]...)
	}
	return h
}
