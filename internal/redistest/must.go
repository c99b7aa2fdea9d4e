package redistest

import "testing"

// Must takes the results of a constructor that can fail, such as
// ledger.NewRedis or budget.NewRedis, and returns a function that fails t
// on the error or returns the value:
//
//	store := redistest.Must(ledger.NewRedis(rdb, cfg))(t)
func Must[T any](v T, err error) func(t testing.TB) T {
	return func(t testing.TB) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}
