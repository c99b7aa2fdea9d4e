package riverjobs_test

import (
	"log/slog"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them. A
// worker child process (see fleet_test.go) runs its role and exits instead.
func TestMain(m *testing.M) {
	if os.Getenv(envRole) != "" {
		os.Exit(m.Run())
	}
	goleak.VerifyTestMain(m)
}

// envRole names the role of a child process of the fleet test.
const envRole = "RIVERJOBS_ROLE"

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
