package browsertest

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/retrybudget/retrybudget/console"
	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/ledgertest"
	"github.com/retrybudget/retrybudget/ledger/pgledger"
	"github.com/retrybudget/retrybudget/ledger/pgledger/pgtest"
)

// requireBrowserEnv, set to 1 (as .ci/run does), turns a missing browser
// into a failure instead of a skip.
const requireBrowserEnv = "RETRYBUDGET_REQUIRE_BROWSER"

const token = "browser-test-operator-token"

// screenshotEnv names a file that TestBrowserSettlesAHeldAction writes the
// action page's screenshot to (PNG), for docs/console.png. Unset means none.
const screenshotEnv = "RETRYBUDGET_CONSOLE_SCREENSHOT"

// waitTimeout bounds each browser step generously: the CI machine has two
// cores shared with other builds, and Chromium's start alone can take
// seconds there.
const waitTimeout = 60 * time.Second

// browser returns a chromedp context on a fresh headless Chromium, or
// skips (fails under RETRYBUDGET_REQUIRE_BROWSER=1) when none is installed.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		if os.Getenv(requireBrowserEnv) == "1" {
			t.Fatalf("no Chromium on PATH and %s=1: install chromium (apt-get install chromium)", requireBrowserEnv)
		}
		t.Skipf("SKIPPED: no Chromium on PATH; the console's browser tests did not run (set %s=1 to fail instead)", requireBrowserEnv)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox, // CI runs as root in a container
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(t.Context(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	// Start the browser now, on the context itself: chromedp ties the
	// browser's life to the first call's context, so that call must carry
	// no timeout (the test binary's -timeout bounds it), and the steps'
	// timeouts below do not pay for Chromium's start.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return ctx
}

// run runs the actions under waitTimeout.
func run(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	if err := chromedp.Do(c, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// get runs one action that returns a value under waitTimeout.
func get[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	v, err := chromedp.Run(c, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// stores are the ledgers the console is driven on. Redis and PostgreSQL
// are real servers: REDIS_ADDR and DATABASE_URL when set, else private
// ones started for the test (internal/redistest, pgledger/pgtest).
var stores = map[string]func(t *testing.T) ledger.Store{
	"memory": func(*testing.T) ledger.Store { return ledger.NewMemory(ledger.MemoryConfig{}) },
	"postgres": func(t *testing.T) ledger.Store {
		s, err := pgledger.New(pgtest.Pool(t), pgledger.Config{Config: ledger.Config{FingerprintKeys: ledgertest.FingerprintKeys()}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
		defer cancel()
		if err := s.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		return s
	},
	"redis": func(t *testing.T) ledger.Store {
		s, err := ledger.NewRedis(redistest.Client(t), ledger.RedisConfig{
			Prefix: redistest.Prefix(t),
			Config: ledger.Config{FingerprintKeys: ledger.FingerprintKeys{redistest.LedgerKey()}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return s
	},
}

// heldConsole serves a console over store holding one uncertain action,
// and returns its URL and the action.
func heldConsole(t *testing.T, store ledger.Store) (string, ledger.Key) {
	t.Helper()
	k := ledger.Key{Tenant: "acme", Operation: "sms.send", Key: "order-1042-sms"}
	ctx := t.Context()
	// A settle time of an hour: "not applied" is asked again however
	// slowly the browser gets to the form on a loaded machine.
	res, err := store.Reserve(ctx, ledger.ReserveRequest{Key: k, Fingerprint: "fp", Owner: "worker-1", MarksSending: true, Settle: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.MarkSending(ctx, k, res.Token); err != nil {
		t.Fatal(err)
	}
	if _, err := store.AddAttempt(ctx, k, res.Token, "timeout"); err != nil {
		t.Fatal(err)
	}
	if err := store.Fail(ctx, k, res.Token, ledger.Failure{EffectPossible: true, Reason: "timeout after the send"}); err != nil {
		t.Fatal(err)
	}
	h, err := console.New(console.Config{Store: store, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/", k
}

// signIn signs in with tok and waits for the element with the id then,
// which the page after signing in shows.
func signIn(t *testing.T, ctx context.Context, url, tok, then string) {
	t.Helper()
	run(t, ctx, "sign in",
		chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), tok),
		chromedp.Click(chromedp.ID("signin")),
		chromedp.WaitVisible(chromedp.ID(then)),
	)
}

func TestBrowserSettlesAHeldAction(t *testing.T) { onEveryStore(t, settlesAHeldAction) }

func settlesAHeldAction(t *testing.T, store ledger.Store) {
	ctx := browser(t)
	url, k := heldConsole(t, store)
	signIn(t, ctx, url, token, "counts")

	run(t, ctx, "held list", chromedp.WaitVisible(chromedp.CSS("#actions a.action")))
	counts := get(t, ctx, "counts", chromedp.Text(chromedp.ID("counts")))
	if !strings.Contains(counts, "1 uncertain") {
		t.Errorf("counts %q, want 1 uncertain", counts)
	}
	run(t, ctx, "open the action",
		chromedp.Click(chromedp.CSS("#actions a.action")),
		chromedp.WaitVisible(chromedp.ID("settle")),
	)
	state := get(t, ctx, "state", chromedp.Text(chromedp.ID("state")))
	if path := os.Getenv(screenshotEnv); path != "" {
		png := get(t, ctx, "screenshot", chromedp.FullScreenshot(100))
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(t, ctx, "settle as applied",
		chromedp.Click(chromedp.ID("applied-yes")),
		chromedp.SetValue(chromedp.ID("status"), "201"),
		chromedp.SendKeys(chromedp.ID("answer"), "SM-provider-reference"),
		chromedp.SendKeys(chromedp.ID("name"), "alice"),
		chromedp.SendKeys(chromedp.ID("reason-input"), "found in Twilio's message log"),
		chromedp.Click(chromedp.ID("settle")),
		chromedp.WaitVisible(chromedp.ID("settled")),
	)
	if state != "uncertain" {
		t.Errorf("action page state %q, want uncertain", state)
	}
	rec, err := store.Get(t.Context(), k)
	if err != nil {
		t.Fatal(err)
	}
	res, err := store.Reserve(t.Context(), ledger.ReserveRequest{Key: k, Fingerprint: "fp", Owner: "worker-2"})
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != ledger.StateCompleted || rec.Outcome == nil || rec.Outcome.Status != 201 || res.Verdict != ledger.VerdictReplayed {
		t.Errorf("after settling in the browser: record %s, next verdict %s; want completed (201), replayed", rec.State, res.Verdict)
	}
}

// onEveryStore runs test on a console over each of the stores.
func onEveryStore(t *testing.T, test func(t *testing.T, store ledger.Store)) {
	for name, open := range stores {
		t.Run(name, func(t *testing.T) { test(t, open(t)) })
	}
}

func TestBrowserRefusesAWrongToken(t *testing.T) { onEveryStore(t, refusesAWrongToken) }

func refusesAWrongToken(t *testing.T, store ledger.Store) {
	ctx := browser(t)
	url, _ := heldConsole(t, store)
	signIn(t, ctx, url, "not-the-token", "failed")
	run(t, ctx, "refused", chromedp.WaitVisible(chromedp.ID("failed")))
	links := get(t, ctx, "links", chromedp.Evaluate[int](`document.querySelectorAll("a.action").length`))
	if links != 0 {
		t.Errorf("a wrong token sees %d actions, want 0", links)
	}
}

// fillSettle fills the open action page's form as "applied".
func fillSettle(name string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.WaitVisible(chromedp.ID("settle")),
		chromedp.Click(chromedp.ID("applied-yes")),
		chromedp.SendKeys(chromedp.ID("name"), name),
		chromedp.SendKeys(chromedp.ID("reason-input"), "found in the provider's log"),
	)
}

func TestBrowserRefusesAPostWithoutCSRFToken(t *testing.T) {
	onEveryStore(t, refusesAPostWithoutCSRFToken)
}

func refusesAPostWithoutCSRFToken(t *testing.T, store ledger.Store) {
	ctx := browser(t)
	url, k := heldConsole(t, store)
	signIn(t, ctx, url, token, "counts")
	run(t, ctx, "open the action",
		chromedp.Click(chromedp.CSS("#actions a.action")),
		fillSettle("mallory"),
	)
	// A forged form is one without the token: take it out of the page.
	get(t, ctx, "drop the CSRF field", chromedp.Evaluate[bool](`document.querySelector('input[name=csrf]').remove(), true`))
	run(t, ctx, "post", chromedp.Click(chromedp.ID("settle")), chromedp.WaitVisible(chromedp.ID("message")))
	title := get(t, ctx, "title", chromedp.Title())
	if rec, _ := store.Get(t.Context(), k); !strings.HasPrefix(title, "Refused") || rec.State != ledger.StateUncertain {
		t.Errorf("page %q, record %s; want Refused and uncertain", title, rec.State)
	}
}

func TestBrowserTwoOperatorsSettleOnce(t *testing.T) { onEveryStore(t, twoOperatorsSettleOnce) }

func twoOperatorsSettleOnce(t *testing.T, store ledger.Store) {
	url, k := heldConsole(t, store)
	// Two operators, two browsers: both have the form open before either
	// settles.
	first, second := browser(t), browser(t)
	for _, b := range []context.Context{first, second} {
		signIn(t, b, url, token, "counts")
		run(t, b, "open the action", chromedp.Click(chromedp.CSS("#actions a.action")), fillSettle("operator"))
	}
	run(t, first, "first settles", chromedp.Click(chromedp.ID("settle")), chromedp.WaitVisible(chromedp.ID("settled")))
	run(t, second, "second settles", chromedp.Click(chromedp.ID("settle")), chromedp.WaitVisible(chromedp.ID("message")))
	title := get(t, second, "title", chromedp.Title())
	rec, err := store.Get(t.Context(), k)
	if err != nil {
		t.Fatal(err)
	}
	takeovers := 0
	for _, a := range rec.Attempts {
		if a.Class == ledger.VerdictReconcile.String() {
			takeovers++
		}
	}
	if !strings.HasPrefix(title, "Not held") && !strings.HasPrefix(title, "Conflict") || rec.State != ledger.StateCompleted || takeovers != 1 {
		t.Errorf("second operator's page %q, record %s with %d takeovers; want a conflict, completed once", title, rec.State, takeovers)
	}
}

func TestBrowserAsksAgainInsideTheSettleTime(t *testing.T) {
	onEveryStore(t, asksAgainInsideTheSettleTime)
}

// asksAgainInsideTheSettleTime settles the action just held, whose settle
// time (an hour) is still running, as not applied: the console
// asks again, showing the sending mark and the last attempt, and settles
// it only on the explicit confirmation.
func asksAgainInsideTheSettleTime(t *testing.T, store ledger.Store) {
	ctx := browser(t)
	url, k := heldConsole(t, store)
	signIn(t, ctx, url, token, "counts")
	run(t, ctx, "settle as not applied",
		chromedp.Click(chromedp.CSS("#actions a.action")),
		chromedp.WaitVisible(chromedp.ID("settle-time")),
		chromedp.Click(chromedp.ID("applied-no")),
		chromedp.SendKeys(chromedp.ID("name"), "alice"),
		chromedp.SendKeys(chromedp.ID("reason-input"), "not in Twilio's message log"),
		chromedp.Click(chromedp.ID("settle")),
		chromedp.WaitVisible(chromedp.ID("ask-again")),
	)
	sending := get(t, ctx, "sending mark", chromedp.Text(chromedp.ID("sending")))
	last := get(t, ctx, "last attempt", chromedp.Text(chromedp.ID("last-attempt")))
	if rec, _ := store.Get(t.Context(), k); rec.State != ledger.StateUncertain {
		t.Fatalf("before the confirmation the record is %s, want uncertain", rec.State)
	}
	if !strings.HasPrefix(sending, "set") || !strings.HasSuffix(last, "(timeout)") {
		t.Errorf("the confirmation page shows sending mark %q and last attempt %q; want set and the timeout", sending, last)
	}
	run(t, ctx, "confirm", chromedp.Click(chromedp.ID("confirm")), chromedp.WaitVisible(chromedp.ID("settled")))
	rec, err := store.Get(t.Context(), k)
	if err != nil {
		t.Fatal(err)
	}
	res, err := store.Reserve(t.Context(), ledger.ReserveRequest{Key: k, Fingerprint: "fp", Owner: "worker-2"})
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != ledger.StateFailed || !strings.Contains(rec.Reason, "confirmed inside the settle time") || res.Verdict != ledger.VerdictRetry {
		t.Errorf("after the confirmation: record %s (%q), next verdict %s; want failed with the confirmation in its reason, retry", rec.State, rec.Reason, res.Verdict)
	}
}
