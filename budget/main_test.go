package budget

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind: neither the
// detached round trips nor go-redis's own dialers, in the parent test
// process and in the fleet's child processes alike.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
