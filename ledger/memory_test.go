package ledger

import (
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/internal/redistest"
)

// fakeClock is a clock that moves only when told to.
type fakeClock struct {
	mu  sync.Mutex // guards now
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newMemoryHarness(t *testing.T) harness {
	clock := &fakeClock{now: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	short := time.Minute
	return harness{
		Store:   NewMemory(MemoryConfig{Now: clock.Now, Config: Config{FingerprintKeys: FingerprintKeys{redistest.LedgerKey()}}}),
		advance: func(_ *testing.T, d time.Duration) { clock.Advance(d) },
		// Past the expiry: at the expiry itself a record is still there,
		// as a Redis key is until its time has passed.
		waitGone: func(*testing.T, Key) { clock.Advance(short + time.Millisecond) },
		short:    short,
	}
}

func TestMemoryConformance(t *testing.T) {
	runConformance(t, newMemoryHarness)
}

// TestMemoryEvictsWithoutSweep pins that a Memory store that is never
// swept still drops expired records as new ones arrive.
func TestMemoryEvictsWithoutSweep(t *testing.T) {
	clock := &fakeClock{now: time.Unix(0, 0)}
	m := NewMemory(MemoryConfig{Now: clock.Now, Config: Config{Retention: time.Minute}})
	for i := range 100 {
		if _, err := m.Reserve(t.Context(), ReserveRequest{Key: Key{Key: strconv.Itoa(i)}}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Minute)
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
