package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

const (
	testToken = "operator-token-for-tests"
	// secretKey and secretFingerprint mark what no page may show.
	secretKey         = "key-SECRET-4f1d"
	secretFingerprint = "fingerprint-SECRET-77aa"
)

// fakeClock is the store's and the console's clock.
type fakeClock struct {
	mu sync.Mutex // guards t
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// fixture is a console over a store, served by httptest.
type fixture struct {
	t     *testing.T
	store ledger.Store
	clock *fakeClock
	srv   *httptest.Server
}

func newFixture(t *testing.T, store ledger.Store, clock *fakeClock, cfg Config) *fixture {
	t.Helper()
	cfg.Store = store
	if cfg.Token == "" && cfg.Authenticate == nil {
		cfg.Token = testToken
	}
	now := time.Now
	if clock != nil {
		now = clock.Now
	}
	h, err := newHandler(cfg, now)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &fixture{t: t, store: store, clock: clock, srv: srv}
}

func memoryFixture(t *testing.T, cfg Config) *fixture {
	clock := &fakeClock{t: time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)}
	store := ledger.NewMemory(ledger.MemoryConfig{Now: clock.Now})
	return newFixture(t, store, clock, cfg)
}

func testKey(tenant, key string) ledger.Key {
	return ledger.Key{Tenant: tenant, Operation: "sms.send", Key: key}
}

// hold leaves k uncertain the way a worker does whose send timed out:
// reserved, marked sending, one attempt, given up with a possible effect.
// heldPastSettle returns a fixture on a Memory store holding one action of
// acme's, given up as uncertain and an hour past its settle time, with
// the action's key and its reference in the held list.
func heldPastSettle(t *testing.T) (*fixture, ledger.Key, string) {
	t.Helper()
	f := memoryFixture(t, Config{})
	k := testKey("acme", secretKey)
	hold(t, f.store, k)
	f.clock.Add(time.Hour)
	return f, k, f.actionRef()
}

func hold(t *testing.T, s ledger.Store, k ledger.Key) {
	t.Helper()
	ctx := context.Background()
	res, err := s.Reserve(ctx, ledger.ReserveRequest{Key: k, Fingerprint: secretFingerprint, Owner: "worker-1", MarksSending: true})
	if err != nil || !res.Verdict.Owns() {
		t.Fatalf("Reserve: %v %v", res.Verdict, err)
	}
	if err := s.MarkSending(ctx, k, res.Token); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddAttempt(ctx, k, res.Token, "timeout"); err != nil {
		t.Fatal(err)
	}
	if err := s.Fail(ctx, k, res.Token, ledger.Failure{EffectPossible: true, Reason: "timeout after the send"}); err != nil {
		t.Fatal(err)
	}
}

// do sends a request with the bearer token (none when token is "").
func (f *fixture) do(method, path, token string, form url.Values) (int, string) {
	f.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, f.srv.URL+path, body)
	if err != nil {
		f.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var (
	actionLink = regexp.MustCompile(`href="\./action/([A-Za-z0-9_-]+)"`)
	csrfField  = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	// sealedField is the settle form's sealed key, which names a first
	// settlement to a second operator.
	sealedField = regexp.MustCompile(`name="k" value="([^"]+)"`)
	seenField   = regexp.MustCompile(`name="seen" value="([^"]+)"`)
)

// actionRef returns the reference of the only action the held list shows.
func (f *fixture) actionRef() string {
	f.t.Helper()
	code, page := f.do("GET", "/", testToken, nil)
	m := actionLink.FindAllStringSubmatch(page, -1)
	if code != 200 || len(m) != 1 {
		f.t.Fatalf("held list: status %d, %d action links, want 200 and 1:\n%s", code, len(m), page)
	}
	return m[0][1]
}

// settleForm returns the action page's form values for settling ref.
func (f *fixture) settleForm(ref string, applied bool) url.Values {
	f.t.Helper()
	code, page := f.do("GET", "/action/"+ref, testToken, nil)
	m := csrfField.FindStringSubmatch(page)
	if code != 200 || m == nil {
		f.t.Fatalf("action page: status %d, csrf field found %t:\n%s", code, m != nil, page)
	}
	v := url.Values{"csrf": {m[1]}, "name": {"alice"}, "reason": {"checked the provider's log"}, "applied": {"no"}}
	if k := sealedField.FindStringSubmatch(page); k != nil {
		v.Set("k", k[1])
	}
	if n := seenField.FindStringSubmatch(page); n != nil {
		v.Set("seen", n[1])
	}
	if applied {
		v.Set("applied", "yes")
		v.Set("status", "201")
		v.Set("answer", `{"sid":"SM-answer-BODY-SECRET"}`)
		v.Set("content_type", "json")
	}
	return v
}

func TestNewRequiresStoreAndAuthentication(t *testing.T) {
	store := ledger.NewMemory(ledger.MemoryConfig{})
	for name, cfg := range map[string]Config{
		"no store": {Token: testToken},
		"no auth":  {Store: store},
	} {
		if _, err := New(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: New = %v, want ErrConfig", name, err)
		}
	}
	if _, err := New(Config{Store: store, Token: testToken}); err != nil {
		t.Errorf("New with a token: %v", err)
	}
}

func TestConsoleRefusesWithoutTheRightToken(t *testing.T) {
	f := memoryFixture(t, Config{})
	hold(t, f.store, testKey("acme", secretKey))
	for name, token := range map[string]string{"none": "", "wrong": "operator-token-for-test"} {
		code, page := f.do("GET", "/", token, nil)
		if code != http.StatusUnauthorized || actionLink.MatchString(page) {
			t.Errorf("%s token: status %d, lists actions %t; want 401 and none", name, code, actionLink.MatchString(page))
		}
	}
	if code, _ := f.do("POST", "/login", "", url.Values{"token": {"wrong"}}); code != http.StatusUnauthorized {
		t.Errorf("login with a wrong token: status %d, want 401", code)
	}
	if code, _ := f.do("GET", "/", testToken, nil); code != http.StatusOK {
		t.Errorf("right token: status %d, want 200", code)
	}
}

func TestLoginSetsASessionCookieThatIsNotTheToken(t *testing.T) {
	f := memoryFixture(t, Config{})
	resp, err := http.PostForm(f.srv.URL+"/login", url.Values{"token": {testToken}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// The client followed the redirect without a jar: read the cookie the
	// login answered with from the first response.
	first := resp.Request.Response
	if first == nil || first.StatusCode != http.StatusSeeOther {
		t.Fatalf("login did not redirect: %v", resp.Status)
	}
	cookies := first.Cookies()
	if len(cookies) != 1 || cookies[0].Value == testToken || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookies %+v: want one HttpOnly SameSite=Strict session cookie that is not the token", cookies)
	}
	req, _ := http.NewRequest("GET", f.srv.URL+"/", nil)
	req.AddCookie(cookies[0])
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("with the session cookie: status %d, want 200", resp.StatusCode)
	}
}

// Mounted under a prefix, as the docs show, the console sends the browser
// back to itself after signing in, not to the host's root.
func TestLoginRedirectStaysUnderTheMountPrefix(t *testing.T) {
	h, err := New(Config{Store: ledger.NewMemory(ledger.MemoryConfig{}), Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/console/", http.StripPrefix("/console", h))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.PostForm(srv.URL+"/console/login", url.Values{"token": {testToken}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := resp.Location()
	if err != nil || resp.StatusCode != http.StatusSeeOther || loc.Path != "/console/" {
		t.Fatalf("login: status %d, Location %q (%v); want 303 to /console/", resp.StatusCode, resp.Header.Get("Location"), loc)
	}
}

func TestSettleWithoutCSRFTokenIsRefused(t *testing.T) {
	f, k, ref := heldPastSettle(t)
	for name, csrf := range map[string]string{"missing": "", "wrong": "AAAA"} {
		form := f.settleForm(ref, false)
		if csrf == "" {
			form.Del("csrf")
		} else {
			form.Set("csrf", csrf)
		}
		if code, _ := f.do("POST", "/action/"+ref+"/settle", testToken, form); code != http.StatusForbidden {
			t.Errorf("%s CSRF token: status %d, want 403", name, code)
		}
	}
	if rec, _ := f.store.Get(context.Background(), k); rec.State != ledger.StateUncertain {
		t.Errorf("after refused posts the record is %s, want uncertain", rec.State)
	}
}

func TestHeldListShowsHeldActionsOldestFirst(t *testing.T) {
	f := memoryFixture(t, Config{})
	hold(t, f.store, testKey("acme", "older"))
	f.clock.Add(10 * time.Minute)
	hold(t, f.store, testKey("globex", "newer"))
	// One in progress whose lease ran out, never given up.
	if _, err := f.store.Reserve(context.Background(), ledger.ReserveRequest{Key: testKey("acme", "stuck"), Fingerprint: "x", Owner: "w2"}); err != nil {
		t.Fatal(err)
	}
	f.clock.Add(time.Hour)
	code, page := f.do("GET", "/", testToken, nil)
	if code != 200 {
		t.Fatalf("status %d", code)
	}
	if !strings.Contains(page, "<b>2</b> uncertain · <b>1</b> in progress past their lease") {
		t.Errorf("counts missing:\n%s", page)
	}
	acme, globex := strings.Index(page, "<td>acme</td><td>sms.send</td><td>uncertain</td>"), strings.Index(page, "<td>globex</td>")
	if acme < 0 || globex < 0 || acme > globex {
		t.Errorf("want acme's older uncertain action listed before globex's (at %d, %d):\n%s", acme, globex, page)
	}
	if !strings.Contains(page, "<td>1h10m0s</td><td>set</td>") {
		t.Errorf("the oldest action's age and sending mark are missing:\n%s", page)
	}
	// Filters.
	if _, page = f.do("GET", "/?tenant=globex", testToken, nil); strings.Count(page, `class="action"`) != 1 {
		t.Errorf("tenant filter: want 1 action:\n%s", page)
	}
	if _, page = f.do("GET", "/?min_age=65m", testToken, nil); strings.Count(page, `class="action"`) != 1 {
		t.Errorf("min_age filter: want the 1 action held over 65m:\n%s", page)
	}
}

func TestHeldListPages(t *testing.T) {
	f := memoryFixture(t, Config{PageSize: 2})
	for i := range 5 {
		hold(t, f.store, testKey("acme", fmt.Sprint("k", i)))
	}
	for page, want := range map[string]int{"1": 2, "2": 2, "3": 1, "9": 1} {
		_, body := f.do("GET", "/?page="+page, testToken, nil)
		if got := strings.Count(body, `class="action"`); got != want {
			t.Errorf("page %s: %d actions, want %d", page, got, want)
		}
	}
}

func TestHeldListReadsAtMostMaxScan(t *testing.T) {
	f := memoryFixture(t, Config{MaxScan: 3})
	for i := range 5 {
		hold(t, f.store, testKey("acme", fmt.Sprint("k", i)))
	}
	_, body := f.do("GET", "/", testToken, nil)
	if got := strings.Count(body, `class="action"`); got != 3 || !strings.Contains(body, "Read the first 3 held records only") {
		t.Errorf("%d actions listed, want 3 and a note that MaxScan was reached:\n%s", got, body)
	}
	f = memoryFixture(t, Config{MaxScan: 5})
	for i := range 5 {
		hold(t, f.store, testKey("acme", fmt.Sprint("k", i)))
	}
	if _, body = f.do("GET", "/", testToken, nil); strings.Contains(body, "Read the first") {
		t.Errorf("exactly MaxScan held records: the page says the list was cut")
	}
}

func TestSettleChangesTheRecordAndTheNextVerdict(t *testing.T) {
	for _, applied := range []bool{true, false} {
		t.Run(fmt.Sprint("applied=", applied), func(t *testing.T) {
			f, k, ref := heldPastSettle(t)
			code, _ := f.do("POST", "/action/"+ref+"/settle", testToken, f.settleForm(ref, applied))
			if code != http.StatusSeeOther {
				t.Fatalf("settle: status %d, want 303", code)
			}
			ctx := context.Background()
			rec, err := f.store.Get(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			res, err := f.store.Reserve(ctx, ledger.ReserveRequest{Key: k, Fingerprint: secretFingerprint, Owner: "worker-2"})
			if err != nil {
				t.Fatal(err)
			}
			if applied {
				if rec.State != ledger.StateCompleted || rec.Outcome == nil || rec.Outcome.Status != 201 || res.Verdict != ledger.VerdictReplayed {
					t.Errorf("record %s, next verdict %s; want completed with status 201, replayed", rec.State, res.Verdict)
				}
				return
			}
			if rec.State != ledger.StateFailed || rec.Reason != "checked the provider's log" || res.Verdict != ledger.VerdictRetry {
				t.Errorf("record %s reason %q, next verdict %s; want failed with the operator's reason, retry", rec.State, rec.Reason, res.Verdict)
			}
		})
	}
}

// holdSettling leaves k uncertain at the fixture's clock with a settle
// time of 2m, longer than the 30s lease: reserved, marked sending, one
// attempt, given up with a possible effect.
func holdSettling(t *testing.T, s ledger.Store, k ledger.Key) {
	t.Helper()
	ctx := context.Background()
	res, err := s.Reserve(ctx, ledger.ReserveRequest{Key: k, Fingerprint: secretFingerprint, Owner: "worker-1", MarksSending: true, Settle: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.MarkSending(ctx, k, res.Token); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddAttempt(ctx, k, res.Token, "timeout"); err != nil {
		t.Fatal(err)
	}
	if err := s.Fail(ctx, k, res.Token, ledger.Failure{EffectPossible: true, Reason: "timeout"}); err != nil {
		t.Fatal(err)
	}
}

var confirmField = regexp.MustCompile(`name="confirm" value="([^"]+)"`)

func TestSettleNotAppliedInsideTheSettleTimeAsksAgain(t *testing.T) {
	f := memoryFixture(t, Config{})
	k := testKey("acme", secretKey)
	holdSettling(t, f.store, k) // at 03:00:00, settle time until 03:02:00
	f.clock.Add(90 * time.Second)
	ref := f.actionRef()
	if _, page := f.do("GET", "/action/"+ref, testToken, nil); !strings.Contains(page, `"not applied" asks you to confirm until then`) {
		t.Errorf("the action page does not warn of the settle time:\n%s", page)
	}
	form := f.settleForm(ref, false)
	code, page := f.do("POST", "/action/"+ref+"/settle", testToken, form)
	m := confirmField.FindStringSubmatch(page)
	if code != http.StatusConflict || m == nil ||
		!strings.Contains(page, `<b id="settle-until">2026-12-04 03:02:00Z</b>`) ||
		!strings.Contains(page, `<td id="sending">set: a request may have left</td>`) ||
		!strings.Contains(page, `<td id="last-attempt">2026-12-04 03:00:00Z (timeout)</td>`) {
		t.Fatalf("inside the settle time: status %d, want 409 with a confirmation form showing the settle time, the sending mark and the last attempt:\n%s", code, page)
	}
	if rec, _ := f.store.Get(context.Background(), k); rec.State != ledger.StateUncertain {
		t.Fatalf("after the first post the record is %s, want uncertain", rec.State)
	}
	// A confirmation that is not the page's is asked again, never taken.
	h := f.srv.Config.Handler.(*handler)
	for name, confirm := range map[string]string{
		"wrong":               "AAAA",
		"another action":      h.confirmToken(h.session(), h.ref(testKey("acme", "other")), h.settleAfter(mustGet(t, f.store, k))),
		"another settle time": h.confirmToken(h.session(), ref, h.settleAfter(mustGet(t, f.store, k)).Add(time.Second)),
	} {
		bad := f.settleForm(ref, false)
		bad.Set("confirm", confirm)
		if code, _ := f.do("POST", "/action/"+ref+"/settle", testToken, bad); code != http.StatusConflict {
			t.Errorf("%s confirmation: status %d, want 409", name, code)
		}
	}
	// The confirmation form without its CSRF token is refused.
	noCSRF := url.Values{"confirm": {m[1]}, "applied": {"no"}, "name": {"alice"}, "reason": {"r"}}
	if code, _ := f.do("POST", "/action/"+ref+"/settle", testToken, noCSRF); code != http.StatusForbidden {
		t.Errorf("confirmation without CSRF token: status %d, want 403", code)
	}
	if rec, _ := f.store.Get(context.Background(), k); rec.State != ledger.StateUncertain {
		t.Fatalf("after refused confirmations the record is %s, want uncertain", rec.State)
	}
	form.Set("confirm", m[1])
	if code, page := f.do("POST", "/action/"+ref+"/settle", testToken, form); code != http.StatusSeeOther {
		t.Fatalf("confirmed: status %d, want 303:\n%s", code, page)
	}
	rec := mustGet(t, f.store, k)
	res, err := f.store.Reserve(context.Background(), ledger.ReserveRequest{Key: k, Fingerprint: secretFingerprint, Owner: "worker-2"})
	if err != nil {
		t.Fatal(err)
	}
	st := rec.Settlement
	if rec.State != ledger.StateFailed || st == nil || st.By != "alice" || !strings.Contains(st.Reason, "confirmed inside the settle time") || res.Verdict != ledger.VerdictRetry {
		t.Errorf("record %s settlement %+v, next verdict %s; want failed, settled by alice with the confirmation in its reason, retry", rec.State, st, res.Verdict)
	}
}

func TestSettleNotAppliedAfterTheSettleTimeNeedsNoConfirmation(t *testing.T) {
	f := memoryFixture(t, Config{})
	k := testKey("acme", secretKey)
	holdSettling(t, f.store, k)
	f.clock.Add(2 * time.Minute)
	ref := f.actionRef()
	if code, _ := f.do("POST", "/action/"+ref+"/settle", testToken, f.settleForm(ref, false)); code != http.StatusSeeOther {
		t.Errorf("at the end of the settle time: status %d, want 303", code)
	}
	if rec := mustGet(t, f.store, k); rec.State != ledger.StateFailed || strings.Contains(rec.Reason, "confirmed") {
		t.Errorf("record %s reason %q, want failed without a confirmation", rec.State, rec.Reason)
	}
}

func mustGet(t *testing.T, s ledger.Store, k ledger.Key) ledger.Record {
	t.Helper()
	rec, err := s.Get(context.Background(), k)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func TestConcurrentSettlesEndWithOneResolution(t *testing.T) {
	f, k, ref := heldPastSettle(t)
	forms := []url.Values{f.settleForm(ref, true), f.settleForm(ref, false)}
	codes := make([]int, len(forms))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, form := range forms {
		wg.Go(func() {
			<-start
			codes[i], _ = f.do("POST", "/action/"+ref+"/settle", testToken, form)
		})
	}
	close(start)
	wg.Wait()
	wins, conflicts := 0, 0
	for _, c := range codes {
		switch c {
		case http.StatusSeeOther:
			wins++
		case http.StatusConflict:
			conflicts++
		}
	}
	rec, err := f.store.Get(context.Background(), k)
	if err != nil {
		t.Fatal(err)
	}
	takeovers := 0
	for _, a := range rec.Attempts {
		if a.Class == ledger.VerdictReconcile.String() {
			takeovers++
		}
	}
	if wins != 1 || conflicts != 1 || takeovers != 1 {
		t.Errorf("statuses %v, %d reconcile takeovers in the record; want one 303, one 409, one takeover", codes, takeovers)
	}
}

func TestTenantScopedOperatorSeesOnlyItsTenants(t *testing.T) {
	f := memoryFixture(t, Config{Token: "-", Authenticate: func(r *http.Request) (Operator, error) {
		if r.Header.Get("Authorization") != "Bearer "+testToken {
			return Operator{}, errors.New("who?")
		}
		return Operator{Name: "bob", Tenants: []string{"acme"}}, nil
	}})
	hold(t, f.store, testKey("acme", "mine"))
	hold(t, f.store, testKey("globex", "theirs"))
	f.clock.Add(time.Hour)
	ref := f.actionRef() // fails unless exactly one action is listed
	if _, page := f.do("GET", "/", testToken, nil); strings.Contains(page, "globex") {
		t.Errorf("an acme operator sees globex:\n%s", page)
	}
	// globex's reference, computed as the console would, is not found.
	h := f.srv.Config.Handler.(*handler)
	other := h.ref(testKey("globex", "theirs"))
	if code, _ := f.do("GET", "/action/"+other, testToken, nil); code != http.StatusNotFound {
		t.Errorf("another tenant's action page: status %d, want 404", code)
	}
	form := f.settleForm(ref, false)
	if code, _ := f.do("POST", "/action/"+other+"/settle", testToken, form); code != http.StatusConflict {
		t.Errorf("settling another tenant's action: status %d, want 409 (not held for this operator)", code)
	}
	if rec, _ := f.store.Get(context.Background(), testKey("globex", "theirs")); rec.State != ledger.StateUncertain {
		t.Errorf("globex's record is %s, want uncertain", rec.State)
	}
}

func TestReadOnlyConsoleRefusesSettling(t *testing.T) {
	f := memoryFixture(t, Config{ReadOnly: true})
	k := testKey("acme", secretKey)
	hold(t, f.store, k)
	f.clock.Add(time.Hour)
	ref := f.actionRef()
	_, page := f.do("GET", "/action/"+ref, testToken, nil)
	if strings.Contains(page, `id="settle"`) {
		t.Errorf("read-only action page shows the settle form")
	}
	h := f.srv.Config.Handler.(*handler)
	form := url.Values{"csrf": {h.csrfToken(h.session())}, "name": {"a"}, "reason": {"r"}, "applied": {"no"}}
	if code, _ := f.do("POST", "/action/"+ref+"/settle", testToken, form); code != http.StatusForbidden {
		t.Errorf("settle on a read-only console: status %d, want 403", code)
	}
	if rec, _ := f.store.Get(context.Background(), k); rec.State != ledger.StateUncertain {
		t.Errorf("record %s, want uncertain", rec.State)
	}
}

func TestPagesNeverShowKeyFingerprintOrBody(t *testing.T) {
	f := memoryFixture(t, Config{})
	k := testKey("acme", secretKey)
	hold(t, f.store, k)
	hold(t, f.store, testKey("acme", secretKey+"-2"))
	f.clock.Add(time.Hour)
	rec, _ := f.store.Get(context.Background(), k)
	var pages []string
	_, list := f.do("GET", "/", testToken, nil)
	pages = append(pages, list)
	refs := actionLink.FindAllStringSubmatch(list, -1)
	for _, m := range refs {
		_, p := f.do("GET", "/action/"+m[1], testToken, nil)
		pages = append(pages, p)
	}
	// Settle one as applied with a body, then look again.
	code, p := f.do("POST", "/action/"+refs[0][1]+"/settle", testToken, f.settleForm(refs[0][1], true))
	if code != http.StatusSeeOther {
		t.Fatalf("settle: %d %s", code, p)
	}
	_, list = f.do("GET", "/", testToken, nil)
	pages = append(pages, list)
	forbidden := []string{secretKey, secretFingerprint, rec.Fingerprint, "SM-answer-BODY-SECRET", k.ID(), k.IdempotencyKey(), testToken}
	for i, p := range pages {
		for _, s := range forbidden {
			if strings.Contains(p, s) {
				t.Errorf("page %d shows %q", i, s)
			}
		}
	}
	if len(pages) != 4 {
		t.Errorf("checked %d pages, want 4", len(pages))
	}
}

func TestSettleRequiresABoundedNameAndReason(t *testing.T) {
	f, k, ref := heldPastSettle(t)
	for name, edit := range map[string]func(url.Values){
		"no reason":       func(v url.Values) { v.Del("reason") },
		"blank name":      func(v url.Values) { v.Set("name", "  ") },
		"reason too long": func(v url.Values) { v.Set("reason", strings.Repeat("x", maxReason+1)) },
		"no choice":       func(v url.Values) { v.Del("applied") },
		"bad status":      func(v url.Values) { v.Set("applied", "yes"); v.Set("status", "2000") },
	} {
		form := f.settleForm(ref, false)
		edit(form)
		if code, _ := f.do("POST", "/action/"+ref+"/settle", testToken, form); code != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", name, code)
		}
	}
	if rec, _ := f.store.Get(context.Background(), k); rec.State != ledger.StateUncertain {
		t.Errorf("record %s, want uncertain", rec.State)
	}
}
