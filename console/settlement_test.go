package console

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// settleTo posts form and returns the status and the redirect's target.
func (f *fixture) settleTo(ref string, form url.Values) (int, string) {
	f.t.Helper()
	req, err := http.NewRequest("POST", f.srv.URL+"/action/"+ref+"/settle", strings.NewReader(form.Encode()))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+testToken)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}

// After settling, the action's page shows the trail the store wrote: as
// what, by whom, when (the store's clock), why and the provider's
// reference, and no settle form; never the key, fingerprint or body.
func TestActionPageShowsTheSettlement(t *testing.T) {
	f, k, ref := heldPastSettle(t)
	form := f.settleForm(ref, true)
	form.Set("reference", "SM-ref-1")
	code, loc := f.settleTo(ref, form)
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "../../action/"+ref+"?") {
		t.Fatalf("settle: %d to %q, want 303 to the action's page", code, loc)
	}
	if strings.Contains(loc, secretKey) {
		t.Fatalf("the redirect carries the key: %q", loc)
	}
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	code, page := f.do("GET", "/action/"+ref+"?"+u.RawQuery, testToken, nil)
	if code != http.StatusOK {
		t.Fatalf("action page after settling: %d\n%s", code, page)
	}
	for _, want := range []string{
		`id="settled-as">applied<`, `id="settled-by">alice<`, `id="settled-at">2026-12-04 04:00:00Z<`,
		`id="settled-why">checked the provider&#39;s log<`, `id="settled-reference">SM-ref-1<`, `id="not-held"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the action's page lacks %s:\n%s", want, page)
		}
	}
	rec, _ := f.store.Get(context.Background(), k)
	for _, s := range []string{secretKey, secretFingerprint, rec.Fingerprint, "SM-answer-BODY-SECRET", k.ID(), testToken} {
		if strings.Contains(page, s) {
			t.Errorf("the action's page shows %q", s)
		}
	}
	// A sealed key is bound to its reference and its handler.
	other := testKey("acme", secretKey+"-other")
	hold(t, f.store, other)
	if code, _ := f.do("GET", "/action/"+ref+"?k=bogus", testToken, nil); code != http.StatusNotFound {
		t.Errorf("a bogus sealed key: %d, want 404", code)
	}
	h2 := memoryFixture(t, Config{})
	if code, _ := h2.do("GET", "/action/"+ref+"?"+u.RawQuery, testToken, nil); code != http.StatusNotFound {
		t.Errorf("a sealed key from another console: %d, want 404", code)
	}
}

// An operator who settles an action another settled first is told who,
// when and as what, and changes nothing.
func TestSecondSettleNamesTheFirstSettlement(t *testing.T) {
	f, k, ref := heldPastSettle(t)
	first, second := f.settleForm(ref, true), f.settleForm(ref, false)
	second.Set("name", "bob")
	if code, _ := f.settleTo(ref, first); code != http.StatusSeeOther {
		t.Fatalf("first settle: %d", code)
	}
	code, page := f.do("POST", "/action/"+ref+"/settle", testToken, second)
	if code != http.StatusConflict || !strings.Contains(page, "already settled as applied by alice at 2026-12-04T04:00:00Z") {
		t.Errorf("second settle: %d, want 409 naming alice's settlement:\n%s", code, page)
	}
	rec, err := f.store.Get(context.Background(), k)
	if err != nil || rec.State != ledger.StateCompleted || rec.Settlement == nil || rec.Settlement.By != "alice" {
		t.Errorf("record %s %+v (%v), want alice's settlement alone", rec.State, rec.Settlement, err)
	}
}

// A settle form is for the send its operator looked at. Posted after the
// action was settled, sent again and held again (a send the operator
// never checked with the provider), it changes nothing: 409, and the
// later send stays held.
func TestSettleFormForAnEarlierSendIsRefused(t *testing.T) {
	f, k, ref := heldPastSettle(t)
	bob := f.settleForm(ref, false) // read for the first send
	bob.Set("name", "bob")
	if code, page := f.do("POST", "/action/"+ref+"/settle", testToken, f.settleForm(ref, false)); code != http.StatusSeeOther {
		t.Fatalf("alice's settle: %d\n%s", code, page)
	}
	hold(t, f.store, k) // the next request sent it again, and it is held again
	f.clock.Add(time.Hour)
	code, page := f.do("POST", "/action/"+ref+"/settle", testToken, bob)
	rec := mustGet(t, f.store, k)
	if code != http.StatusConflict || !strings.Contains(page, "sent or settled again") || rec.State != ledger.StateUncertain {
		t.Fatalf("bob's form for the first send: status %d, record %s; want 409 \"Changed\" and the second send still held:\n%s", code, rec.State, page)
	}
	// Read again, the page's form settles the send it shows.
	if code, page := f.do("POST", "/action/"+ref+"/settle", testToken, f.settleForm(ref, false)); code != http.StatusSeeOther {
		t.Fatalf("a form read for the second send: %d\n%s", code, page)
	}
}
