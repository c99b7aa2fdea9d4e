package console

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/limiter"
)

// destinationTraffic sends, through a real Transport observed by m, calls
// to two httptest providers: to sms, acme's first call is answered 429
// with a Retry-After that pauses the boundary, and globex's call after it
// is refused by the limiter (its wait cannot fit its deadline); to pay,
// acme's action is sent, then replayed, then its key reused for another
// body (a conflict). It returns the two destinations' names.
func destinationTraffic(t *testing.T, m *Metrics) (sms, pay string) {
	t.Helper()
	var smsCalls, payCalls atomic.Int64
	smsSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if smsCalls.Add(1) == 1 {
			w.Header().Set("Retry-After", "600")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(smsSrv.Close)
	paySrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		payCalls.Add(1)
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(paySrv.Close)
	lim, err := limiter.NewLocal(limiter.LocalConfig{})
	if err != nil {
		t.Fatal(err)
	}
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	tr := retrybudget.New(retrybudget.Config{
		Base: base, Limiter: lim, MaxAttempts: 1,
		Ledger:   retrybudget.LedgerConfig{Store: ledger.NewMemory(ledger.MemoryConfig{})},
		Observer: m.Observer(),
	})
	call := func(url, tenant, key, body string, timeout time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		ctx = retrybudget.WithAction(ctx, retrybudget.Action{Tenant: tenant, Operation: "sms.send", Key: key})
		req, err := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := tr.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	_ = call(smsSrv.URL, "acme", "sms-1", "hello", time.Minute)
	if err := call(smsSrv.URL, "globex", "sms-2", "hello", 5*time.Second); !errors.Is(err, retrybudget.ErrRateLimited) {
		t.Fatalf("globex's call to the paused boundary: %v, want ErrRateLimited", err)
	}
	for i, body := range []string{"charge", "charge", "another charge"} {
		err := call(paySrv.URL, "acme", "pay-1", body, time.Minute)
		if (i < 2) != (err == nil) {
			t.Fatalf("pay call %d: %v", i, err)
		}
	}
	if smsCalls.Load() != 1 || payCalls.Load() != 1 {
		t.Fatalf("the providers saw %d and %d requests, want 1 and 1", smsCalls.Load(), payCalls.Load())
	}
	return strings.TrimPrefix(smsSrv.URL, "http://"), strings.TrimPrefix(paySrv.URL, "http://")
}

var (
	chartLine  = regexp.MustCompile(`<tr><th>([^<]+)</th><td><svg class="chart"[^>]*><title>[^<]*</title><rect [^>]*/>((?:<rect class="bar"[^>]*/>)*)</svg></td><td class="n metric">([^<]*)</td></tr>`)
	tenantCell = regexp.MustCompile(`<tr class="tenant"><td>([^<]+)</td>((?:<td class="n">[^<]*</td>)+)</tr>`)
)

// charts returns each chart's total and number of bars, by name.
func charts(page string) map[string][2]string {
	out := map[string][2]string{}
	for _, m := range chartLine.FindAllStringSubmatch(page, -1) {
		out[m[1]] = [2]string{m[3], strings.Repeat("|", strings.Count(m[2], `class="bar"`))}
	}
	return out
}

func TestDestinationPageChartsTransportEvents(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)}
	m := NewMetrics(MetricsConfig{Now: clock.Now})
	sms, pay := destinationTraffic(t, m)
	f := newFixture(t, ledger.NewMemory(ledger.MemoryConfig{Now: clock.Now}), clock, Config{Metrics: m})

	code, list := f.do("GET", "/destinations", testToken, nil)
	if code != 200 || strings.Count(list, `class="destination"`) != 2 || !strings.Contains(list, `<meta http-equiv="refresh" content="5">`) {
		t.Fatalf("destinations: status %d, want 200 listing 2 destinations and reloading every 5s:\n%s", code, list)
	}
	code, page := f.do("GET", "/destination?name="+sms, testToken, nil)
	if code != 200 {
		t.Fatalf("sms destination: status %d:\n%s", code, page)
	}
	c := charts(page)
	for name, want := range map[string][2]string{
		"arrivals per second (first attempts sent)": {"0.10/s now, 1 in the window", "|"},
		"provider 429s":                         {"1", "|"},
		"provider pauses (Retry-After)":         {"1", "|"},
		"limiter waits":                         {"1", "|"},
		"limiter refusals (wait could not fit)": {"1", "|"},
		"replays (stored answers)":              {"0", ""},
	} {
		if c[name] != want {
			t.Errorf("chart %q: total and bars %q, want %q", name, c[name], want)
		}
	}
	if len(c) != 10 || !strings.Contains(page, `id="paused"`) {
		t.Errorf("%d charts and paused shown %t, want 10 and the pause:\n%s", len(c), strings.Contains(page, `id="paused"`), page)
	}
	tenants := tenantCell.FindAllStringSubmatch(page, -1)
	if len(tenants) != 2 || tenants[0][1] != "acme" || tenants[1][1] != "globex" ||
		!strings.HasPrefix(tenants[0][2], `<td class="n">1</td><td class="n">100%</td><td class="n">1</td>`) ||
		!strings.HasPrefix(tenants[1][2], `<td class="n">0</td><td class="n">0%</td><td class="n">0</td><td class="n">1</td>`) {
		t.Errorf("tenant rows %q; want acme with the one arrival and 429, globex with a wait and no arrival", tenants)
	}

	_, page = f.do("GET", "/destination?name="+pay, testToken, nil)
	c = charts(page)
	if c["replays (stored answers)"] != [2]string{"1", "|"} || c["conflicts (key reused)"] != [2]string{"1", "|"} || !strings.Contains(page, `id="budget"`) {
		t.Errorf("pay destination: replays %q, conflicts %q, budget shown %t; want 1 each in one bar and the budget", c["replays (stored answers)"], c["conflicts (key reused)"], strings.Contains(page, `id="budget"`))
	}

	// Ten minutes on, the window is empty: the charts drop the events.
	clock.Add(10 * time.Minute)
	if _, page = f.do("GET", "/destination?name="+sms, testToken, nil); charts(page)["provider 429s"] != [2]string{"0", ""} {
		t.Errorf("a window later: 429s %q, want none", charts(page)["provider 429s"])
	}
}

func TestDestinationPagesShowAScopedOperatorItsTenantsOnly(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)}
	m := NewMetrics(MetricsConfig{Now: clock.Now})
	sms, pay := destinationTraffic(t, m)
	f := newFixture(t, ledger.NewMemory(ledger.MemoryConfig{Now: clock.Now}), clock, Config{Metrics: m, Authenticate: func(r *http.Request) (Operator, error) {
		return Operator{Name: "gina", Tenants: []string{"globex"}}, nil
	}})
	_, list := f.do("GET", "/destinations", "", nil)
	if strings.Count(list, `class="destination"`) != 1 || !strings.Contains(list, sms) || strings.Contains(list, pay) {
		t.Errorf("globex's operator sees the destinations:\n%s\nwant the sms one only (acme alone called pay)", list)
	}
	_, page := f.do("GET", "/destination?name="+sms, "", nil)
	tenants := tenantCell.FindAllStringSubmatch(page, -1)
	if len(tenants) != 1 || tenants[0][1] != "globex" || strings.Contains(page, "acme") || strings.Contains(page, `id="budget"`) ||
		charts(page)["provider 429s"] != [2]string{"0", ""} || charts(page)["limiter refusals (wait could not fit)"] != [2]string{"1", "|"} {
		t.Errorf("globex's operator's page: tenants %q, 429s %q, refusals %q; want globex only, none of acme's 429, its own refusal, no budget:\n%s",
			tenants, charts(page)["provider 429s"], charts(page)["limiter refusals (wait could not fit)"], page)
	}
	if code, _ := f.do("GET", "/destination?name="+pay, "", nil); code != http.StatusNotFound {
		t.Errorf("a destination only acme called: status %d, want 404", code)
	}
}

func TestDestinationPagesWithoutMetrics(t *testing.T) {
	f := memoryFixture(t, Config{})
	if code, page := f.do("GET", "/destinations", testToken, nil); code != http.StatusNotFound || !strings.Contains(page, "console.Config.Metrics") {
		t.Errorf("without Metrics: status %d, want 404 naming console.Config.Metrics:\n%s", code, page)
	}
	if code, _ := f.do("GET", "/destinations", "", nil); code != http.StatusUnauthorized {
		t.Errorf("without a token: status %d, want 401", code)
	}
}
