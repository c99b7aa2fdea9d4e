package console

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/ledger"
)

func TestConsoleOnRedisListsAndSettles(t *testing.T) {
	store := redisStore(t)
	f := newFixture(t, store, nil, Config{})
	k := testKey("acme", secretKey)
	hold(t, store, k)
	ref := f.actionRef()
	if code, page := f.do("POST", "/action/"+ref+"/settle", testToken, f.settleForm(ref, true)); code != http.StatusSeeOther {
		t.Fatalf("settle: status %d:\n%s", code, page)
	}
	res, err := store.Reserve(context.Background(), ledger.ReserveRequest{Key: k, Fingerprint: secretFingerprint, Owner: "worker-2"})
	if err != nil || res.Verdict != ledger.VerdictReplayed || res.Record.Outcome.Status != 201 {
		t.Errorf("next Reserve: %v %v, want replayed with status 201", res.Verdict, err)
	}
}

// redisStore returns a Redis ledger on the test's Redis, under a prefix of
// the test's own.
func redisStore(t *testing.T) *ledger.Redis {
	t.Helper()
	store, err := ledger.NewRedis(redistest.Client(t), ledger.RedisConfig{
		Prefix: redistest.Prefix(t),
		Config: ledger.Config{FingerprintKeys: ledger.FingerprintKeys{redistest.LedgerKey()}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// TestScopedOperatorCountsOnlyItsTenants: on Redis the held index counts
// every tenant's actions; an operator scoped to some tenants is told how
// many of its own are held, not how many the others have.
func TestScopedOperatorCountsOnlyItsTenants(t *testing.T) {
	store := redisStore(t)
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

// The held index's next-page link on Redis carries its cursor sealed: the
// cursor holds an action's Key.ID, an unkeyed hash of its key that anyone
// reading an access log could test guesses against. Followed, the link
// lists the next page; a cursor this console did not seal is refused.
func TestHeldPagesOnRedisLinkWithoutKeyIDs(t *testing.T) {
	store := redisStore(t)
	f := newFixture(t, store, nil, Config{PageSize: 2})
	var ids []string
	for i := range 3 {
		k := testKey("acme", "order-"+strconv.Itoa(i))
		hold(t, store, k)
		ids = append(ids, k.ID())
	}
	_, page := f.do("GET", "/", testToken, nil)
	m := regexp.MustCompile(`href="\./(\?[^"]*)" id="next"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no next link:\n%s", page)
	}
	next := html.UnescapeString(m[1])
	for _, id := range ids {
		if strings.Contains(next, id) {
			t.Fatalf("next link %q carries Key.ID %s", next, id)
		}
	}
	if _, page = f.do("GET", "/"+next, testToken, nil); strings.Count(page, `class="action"`) != 1 {
		t.Errorf("the next page: want the third held action:\n%s", page)
	}
	if code, _ := f.do("GET", "/?after="+url.QueryEscape("0:"+ids[0])+"&page=2", testToken, nil); code != http.StatusBadRequest {
		t.Errorf("a cursor in the clear: status %d, want 400", code)
	}
}
