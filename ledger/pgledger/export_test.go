package pgledger

// BatchWaiting returns how many statements of s wait for its next batch.
func BatchWaiting(s *Store) int {
	if s.batch == nil {
		return 0
	}
	return s.batch.calls.Waiting()
}

// BatchBusy reports whether a round trip of s's batcher is in flight.
func BatchBusy(s *Store) bool { return s.batch != nil && s.batch.calls.Busy() }

// SharedStatements returns how many statements of s went in a shared
// round trip, and in how many such round trips.
func SharedStatements(s *Store) (calls, batches int64) { return s.sharedStatements() }
