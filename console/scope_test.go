package console

import (
	"net/http"
	"regexp"
	"strconv"
	"testing"

	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/ledger"
)

// TestScopedOperatorCountsOnlyItsTenants: on Redis the held index counts
// every tenant's actions; an operator scoped to some tenants is told how
// many of its own are held, not how many the others have.
func TestScopedOperatorCountsOnlyItsTenants(t *testing.T) {
	c := redistest.Client(t)
	store, err := ledger.NewRedis(c, ledger.RedisConfig{
		Prefix: redistest.Prefix(t),
		Config: ledger.Config{FingerprintKeys: ledger.FingerprintKeys{redistest.LedgerKey()}},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, store, nil, Config{Authenticate: func(*http.Request) (Operator, error) {
		return Operator{Name: "acme-op", Tenants: []string{"acme", "acme-eu"}}, nil
	}})
	hold(t, store, testKey("acme", "a1"))
	for i := range 7 {
		hold(t, store, testKey("globex", "g"+strconv.Itoa(i)))
	}
	_, page := f.do("GET", "/", "", nil)
	m := regexp.MustCompile(`\((\d+) in the held index\)`).FindStringSubmatch(page)
	if m == nil || m[1] != "1" {
		t.Errorf("scoped to acme, the page counts %v held actions, want 1", m)
	}
}
