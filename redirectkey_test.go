package retrybudget

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// movingCharges is a fake provider that honours idempotency keys across
// its URLs, and answers a request at /old with a redirect to /new before it
// looks at the key (a gateway or a moved resource answers before the
// application that keeps the keys): the first POST at /old is applied and
// answered 500, every later one is redirected.
type movingCharges struct {
	mu       sync.Mutex // guards the fields below
	redirect int
	oldSeen  int
	applied  int
	keys     map[string]bool
	hopKeys  []string
}

func (m *movingCharges) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	m.mu.Lock()
	defer m.mu.Unlock()
	key := r.Header.Get("Idempotency-Key")
	switch r.URL.Path {
	case "/repos/old/issues":
		m.oldSeen++
		if m.oldSeen > 1 {
			http.Redirect(w, r, "/repos/new/issues", m.redirect)
			return
		}
	case "/repos/new/issues":
		m.hopKeys = append(m.hopKeys, key)
	default:
		http.NotFound(w, r)
		return
	}
	if key == "" || !m.keys[key] {
		m.keys[key] = true
		m.applied++
		if r.URL.Path == "/repos/old/issues" {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
	}
	w.WriteHeader(http.StatusCreated)
}

func TestRedirectHopCarriesTheActionKeyWhereKeysAreHonoured(t *testing.T) {
	for _, redirect := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		for _, ledgered := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d ledger=%v", redirect, ledgered), func(t *testing.T) {
				m := &movingCharges{redirect: redirect, keys: map[string]bool{}}
				p := newProvider(t, m.ServeHTTP)
				cfg := Config{KeysHonoured: true, MaxAttempts: 3, BaseDelay: time.Millisecond}
				if ledgered {
					cfg.Ledger.Store = ledger.NewMemory(ledger.MemoryConfig{})
				}
				code, err := runJob(t, New(cfg), p.URL, "old")
				_ = code
				m.mu.Lock()
				defer m.mu.Unlock()
				if m.applied != 1 {
					t.Fatalf("one action applied %d times (hop keys %q, action key %q, status %d, error %v); want once",
						m.applied, m.hopKeys, openIssue.IdempotencyKey(), code, err)
				}
				if len(m.hopKeys) == 0 || m.hopKeys[0] != openIssue.IdempotencyKey() {
					t.Fatalf("the hop carried keys %q; want the action's %q", m.hopKeys, openIssue.IdempotencyKey())
				}
			})
		}
	}
}
