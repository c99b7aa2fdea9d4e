package twilio_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/console"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/presets"
)

// operatorConsole is an operator's view of a console served over store,
// signed in with a bearer token.
type operatorConsole struct {
	t   *testing.T
	url string
}

const consoleToken = "twilio-walkthrough-token"

func (c operatorConsole) do(method, path string, form url.Values) (int, string) {
	c.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, c.url+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Authorization", "Bearer "+consoleToken)
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var (
	consoleAction  = regexp.MustCompile(`<tr><td><a class="action" href="\./action/([A-Za-z0-9_-]+)">[^<]*</a></td><td>acme</td><td>sms</td><td>uncertain</td><td>[^<]*</td><td>set</td>`)
	consoleCSRF    = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	consoleConfirm = regexp.MustCompile(`name="confirm" value="([^"]+)"`)
	// consoleSeen is the number of the send the page shows, which the
	// settle form carries so that it settles that send and no later one.
	consoleSeen = regexp.MustCompile(`name="seen" value="([^"]+)"`)
)

// TestHeldSMSSettledFromTheConsole walks docs/operating.md's "Settling a
// held SMS from the console": an SMS sent with twilio-go under a ledger is
// held (StepHold) when its answer was lost after Twilio created the
// message, and another when it was cut before Twilio got it. The console
// lists each with the sending mark set; the operator settles the first as
// applied with the message's SID from Twilio's log, and the second as not
// applied, which inside the settle time the console asks to confirm. The worker's next
// run replays the first and sends the second: one message per order.
func TestHeldSMSSettledFromTheConsole(t *testing.T) {
	fake := &messaging{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	store := ledger.NewMemory(ledger.MemoryConfig{})
	routes := presets.TwilioRoutes()
	for i := range routes {
		routes[i] = routes[i].At(srv.URL)
	}
	tr := retrybudget.New(retrybudget.Config{Routes: routes, Ledger: retrybudget.LedgerConfig{Store: store}})
	h, err := console.New(console.Config{Store: store, Token: consoleToken})
	if err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(h)
	defer web.Close()
	c := operatorConsole{t: t, url: web.URL}

	// onlyHeld returns the reference of the one action the list shows:
	// uncertain, acme's sms, the sending mark set.
	onlyHeld := func() string {
		t.Helper()
		code, list := c.do("GET", "/", nil)
		rows := consoleAction.FindAllStringSubmatch(list, -1)
		if code != 200 || len(rows) != 1 || !strings.Contains(list, "<b>1</b> uncertain") {
			t.Fatalf("held list: status %d, %d uncertain acme sms rows with the sending mark set; want 200 and 1:\n%s", code, len(rows), list)
		}
		return rows[0][1]
	}

	// Order 1001: Twilio created the message, the answer was lost.
	fake.lose = true
	if step := sendSMS(t, srv.URL, tr, "1001"); step != retrybudget.StepHold {
		t.Fatalf("lost answer: step %v, want hold", step)
	}
	ref := onlyHeld()
	_, page := c.do("GET", "/action/"+ref, nil)
	m, seen := consoleCSRF.FindStringSubmatch(page), consoleSeen.FindStringSubmatch(page)
	if m == nil || seen == nil || !strings.Contains(page, `<td id="state">uncertain</td>`) || !strings.Contains(page, "set: a request may have left") {
		t.Fatalf("1001's page lacks the form, the state or the sending mark:\n%s", page)
	}
	// Twilio's log has it: settle as applied with its answer.
	fake.mu.Lock()
	sid := fake.msgs[0]["sid"].(string)
	fake.mu.Unlock()
	code, page := c.do("POST", "/action/"+ref+"/settle", url.Values{
		"csrf": {m[1]}, "seen": {seen[1]}, "applied": {"yes"}, "status": {"201"}, "content_type": {"json"},
		"answer": {`{"sid":"` + sid + `","status":"queued"}`},
		"name":   {"alice"}, "reason": {"found " + sid + " in Twilio's message log"},
	})
	if code != http.StatusSeeOther {
		t.Fatalf("settling 1001 as applied: status %d:\n%s", code, page)
	}

	// Order 1002: cut before Twilio got it. Not in Twilio's log: not
	// applied, which inside the settle time the console asks to confirm.
	fake.drop = true
	if step := sendSMS(t, srv.URL, tr, "1002"); step != retrybudget.StepHold {
		t.Fatalf("cut send: step %v, want hold", step)
	}
	ref = onlyHeld()
	_, page = c.do("GET", "/action/"+ref, nil)
	m, seen = consoleCSRF.FindStringSubmatch(page), consoleSeen.FindStringSubmatch(page)
	if m == nil || seen == nil {
		t.Fatalf("1002's page lacks the form:\n%s", page)
	}
	form := url.Values{"csrf": {m[1]}, "seen": {seen[1]}, "applied": {"no"}, "name": {"alice"}, "reason": {"not in Twilio's message log"}}
	code, page = c.do("POST", "/action/"+ref+"/settle", form)
	cm := consoleConfirm.FindStringSubmatch(page)
	if code != http.StatusConflict || cm == nil {
		t.Fatalf("settling 1002 as not applied inside the settle time: status %d, confirmation asked %t; want 409 and the confirmation:\n%s", code, cm != nil, page)
	}
	form.Set("confirm", cm[1])
	if code, page = c.do("POST", "/action/"+ref+"/settle", form); code != http.StatusSeeOther {
		t.Fatalf("confirming 1002: status %d:\n%s", code, page)
	}
	if _, list := c.do("GET", "/", nil); !strings.Contains(list, `id="none"`) {
		t.Errorf("after settling both, the held list still shows actions:\n%s", list)
	}

	// The worker's next run: 1001 replayed, 1002 sent once.
	for _, order := range []string{"1001", "1002"} {
		if step := sendSMS(t, srv.URL, tr, order); step != retrybudget.StepDone {
			t.Errorf("rerun of %s: step %v, want done", order, step)
		}
	}
	if got := fake.created(); got != 2 {
		t.Errorf("messages created = %d, want 2: one per order", got)
	}
}
