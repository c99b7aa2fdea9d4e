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

// stores are the ledgers the console is driven on.
var stores = map[string]func(t *testing.T) ledger.Store{
	"memory": func(*testing.T) ledger.Store { return ledger.NewMemory(ledger.MemoryConfig{}) },
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
	res, err := store.Reserve(ctx, ledger.ReserveRequest{Key: k, Fingerprint: "fp", Owner: "worker-1", MarksSending: true})
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

func TestBrowserSettlesAHeldAction(t *testing.T) {
	for name, open := range stores {
		t.Run(name, func(t *testing.T) { settlesAHeldAction(t, open(t)) })
	}
}

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

func TestBrowserRefusesAWrongToken(t *testing.T) {
	ctx := browser(t)
	url, _ := heldConsole(t, ledger.NewMemory(ledger.MemoryConfig{}))
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
	ctx := browser(t)
	store := ledger.NewMemory(ledger.MemoryConfig{})
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

func TestBrowserTwoOperatorsSettleOnce(t *testing.T) {
	store := ledger.NewMemory(ledger.MemoryConfig{})
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
