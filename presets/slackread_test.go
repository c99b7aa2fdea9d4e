package presets_test

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/presets"
)

// TestSlackReadMethodsRepeatAsPost sends Web API methods as slack-go does,
// POST with a form body, and answers 500 twice: the read methods change
// nothing, so they are repeated; a write is sent once.
func TestSlackReadMethodsRepeatAsPost(t *testing.T) {
	for _, c := range []struct {
		method   string
		arrivals int
	}{
		{"conversations.history", 3},
		{"conversations.replies", 3},
		{"users.list", 3},
		{"users.info", 3},
		{"chat.postMessage", 1},
	} {
		t.Run(c.method, func(t *testing.T) {
			f := newFake(t, reply{status: 500}, reply{status: 503}, reply{status: 200, header: []string{"Content-Type", "application/json"}, body: `{"ok":true}`})
			cl := atFake(t, f, []retrybudget.Route{presets.Slack()}, nil)
			req, _ := http.NewRequest("POST", f.srv.URL+"/api/"+c.method, strings.NewReader(url.Values{"token": {"xoxb-1"}, "channel": {"C1"}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			resp, err := cl.Do(req)
			t.Logf("%s: %d arrivals", c.method, f.arrivals())
			if f.arrivals() != c.arrivals {
				t.Fatalf("%d arrivals; want %d", f.arrivals(), c.arrivals)
			}
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			out, _ := retrybudget.OutcomeOf(resp)
			if c.arrivals == 1 && (resp.StatusCode != 500 || !errors.Is(out.Reason, retrybudget.ErrUncertain)) {
				t.Fatalf("status %d, reason %v; want the 500 with ErrUncertain for a write", resp.StatusCode, out.Reason)
			}
			if c.arrivals == 3 && resp.StatusCode != 200 {
				t.Fatalf("status %d; want the read answered", resp.StatusCode)
			}
		})
	}
}

// TestSlackBoundaryMapsTokensToTheirApp sends a bot token and a user token
// of one app in one workspace, and a token of another workspace, through
// SlackBoundary: the first two share the method's boundary.
func TestSlackBoundaryMapsTokensToTheirApp(t *testing.T) {
	f := newFake(t, reply{status: 200, body: `{"ok":true}`})
	lim := &recorder{}
	r := presets.Slack()
	teams := map[string]string{"xoxb-bot": "T1/A1", "xoxp-user": "T1/A1", "xoxb-other": "T2/A1"}
	r.Config.Boundary = presets.SlackBoundary(func(tok string) string { return teams[tok] })
	cl := atFake(t, f, []retrybudget.Route{r}, func(cfg *retrybudget.Config) { cfg.Limiter = lim })
	for _, tok := range []string{"xoxb-bot", "xoxp-user", "xoxb-other", "xoxb-unknown"} {
		req, _ := http.NewRequest("POST", f.srv.URL+"/api/chat.postMessage", strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	b, _ := lim.recorded()
	if b[0] != "slack:T1/A1|chat.postMessage" || b[1] != b[0] || b[2] != "slack:T2/A1|chat.postMessage" {
		t.Fatalf("boundaries %q; want the bot and user tokens on slack:T1/A1|chat.postMessage, the other workspace apart", b)
	}
	if strings.Contains(b[3], "xoxb-unknown") || b[3] == b[0] || !strings.HasSuffix(b[3], "|chat.postMessage") {
		t.Fatalf("unmapped token's boundary %q; want a hash of its own", b[3])
	}
}
