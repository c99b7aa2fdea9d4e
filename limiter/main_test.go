package limiter

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind, including the
// ones Redis spawns for clients that ignore context deadlines.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
