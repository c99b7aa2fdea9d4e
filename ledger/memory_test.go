package ledger

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/internal/fakeclock"
)

// keyA, fpA and fpB are the action and fingerprints of the package's own
// tests; the conformance suite (ledgertest) has its own.
var (
	keyA = Key{Tenant: "acme", Operation: "charge", Key: "order-1"}
	fpA  = "fingerprint-A"
	fpB  = "fingerprint-B"
)

// TestMemoryEvictsWithoutSweep pins that a Memory store that is never
// swept still drops expired records (past ExpiryGrace) as new ones arrive.
func TestMemoryEvictsWithoutSweep(t *testing.T) {
	clock := fakeclock.New(time.Unix(0, 0))
	m := NewMemory(MemoryConfig{Now: clock.Now, Config: Config{Retention: time.Minute}})
	for i := range 100 {
		if _, err := m.Reserve(t.Context(), ReserveRequest{Key: Key{Key: strconv.Itoa(i)}}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Minute + ExpiryGrace)
	}
	m.mu.Lock()
	n := len(m.entries)
	m.mu.Unlock()
	if n > 2 {
		t.Fatalf("%d records held, want at most the live one and one not yet examined", n)
	}
}

// Regression: a lease with a fraction of a millisecond was kept whole by
// memory and truncated by Redis; both now refuse it.
func TestLeaseMustBeWholeMilliseconds(t *testing.T) {
	m := NewMemory(MemoryConfig{})
	_, err := m.Reserve(t.Context(), ReserveRequest{Key: Key{Key: "k"}, Fingerprint: "f", Lease: 1999 * time.Microsecond})
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("a 1.999ms lease: %v; want ErrInvalid", err)
	}
}
