package twilio_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	twilioapi "github.com/twilio/twilio-go/rest/api/v2010"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/integrations/internal/sdktest"
	rbtwilio "github.com/retrybudget/retrybudget/integrations/twilio"
	"github.com/retrybudget/retrybudget/internal/fakeclock"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/presets"
)

// messaging is a fake of Twilio's Message resource as Twilio documents
// it: POST .../Messages.json creates a message (To, From, Body) and
// answers 201; GET .../Messages.json lists the account's messages, newest
// first, filtered by To and From. lose makes it apply the next POST and
// then cut the connection instead of answering, as a request whose answer
// is lost; drop cuts it before applying anything.
type messaging struct {
	// mu guards everything below.
	mu         sync.Mutex
	msgs       []map[string]any
	lose, drop bool
	creates    int
}

func (m *messaging) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/Messages.json") {
		http.NotFound(w, r)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if r.Method == http.MethodGet {
		var page []map[string]any
		for i := len(m.msgs) - 1; i >= 0; i-- {
			msg := m.msgs[i]
			if to := r.URL.Query().Get("To"); to != "" && msg["to"] != to {
				continue
			}
			if from := r.URL.Query().Get("From"); from != "" && msg["from"] != from {
				continue
			}
			page = append(page, msg)
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"messages": page, "next_page_uri": nil, "page": 0, "page_size": len(page)})
		return
	}
	if m.drop {
		m.drop = false
		sdktest.Cut(w)
		return
	}
	r.ParseForm()
	m.creates++
	msg := map[string]any{
		"sid": fmt.Sprintf("SM%032d", m.creates), "to": r.PostForm.Get("To"), "from": r.PostForm.Get("From"),
		"body": r.PostForm.Get("Body"), "status": "queued", "date_created": time.Now().UTC().Format(time.RFC1123Z),
	}
	m.msgs = append(m.msgs, msg)
	if m.lose {
		m.lose = false
		sdktest.Cut(w)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(msg)
}

func (m *messaging) created() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.creates
}

// smsFor is the worker's own rule: the message an order sends.
func smsFor(_ context.Context, k ledger.Key) (*twilioapi.CreateMessageParams, error) {
	return (&twilioapi.CreateMessageParams{}).SetTo("+15550001").SetFrom("+15550002").SetBody("Order " + k.Key + " has shipped"), nil
}

// sendSMS sends an order's message through twilio-go on tr under its
// Action and returns what Next says.
func sendSMS(t *testing.T, url string, tr http.RoundTripper, order string) retrybudget.Step {
	t.Helper()
	a := retrybudget.Action{Tenant: "acme", Operation: "sms", Key: order}
	ctx, out := retrybudget.CaptureOutcome(retrybudget.WithAction(context.Background(), a))
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	tc, err := rbtwilio.NewClient(ctx, "AC123", "token123", url, tr)
	if err != nil {
		t.Fatal(err)
	}
	params, _ := smsFor(ctx, a)
	_, err = tc.Api.CreateMessage(params)
	o, ok := out.Last()
	if !ok {
		t.Fatalf("no outcome captured (err %v)", err)
	}
	if err == nil {
		return retrybudget.StepDone
	}
	// twilio-go hides the Transport's *Error: read the captured Outcome.
	step, _ := retrybudget.Next(nil, &retrybudget.Error{Outcome: o})
	return step
}

// TestTwilioReconcilerSettlesHeldMessages: an SMS whose answer was lost is
// held (StepHold); the reconciler finds it by recipient, sender and text
// and completes the action, so the next run replays it (1 message). An
// SMS cut before Twilio got it is held too; the reconciler leaves it
// uncertain inside the settle time (a crashed send may still be applied)
// and fails it after, so the next run sends it, once.
func TestTwilioReconcilerSettlesHeldMessages(t *testing.T) {
	fake := &messaging{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	clock := fakeclock.New(time.Now())
	// The store and the reconciler wait out the same settle time.
	const settle = 20 * time.Second
	store := ledger.NewMemory(ledger.MemoryConfig{Now: clock.Now})
	tr := retrybudget.New(retrybudget.Config{Routes: sdktest.SettledRoutes(presets.TwilioRoutes(), srv.URL, settle),
		Ledger: retrybudget.LedgerConfig{Store: store}})
	rc, err := rbtwilio.NewReconcilerAt(rbtwilio.ReconcilerConfig{
		AccountSID: "AC123", AuthToken: "token123", BaseURL: srv.URL, Message: smsFor, Settle: settle,
	}, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	sdktest.HeldSends{
		Store: store, Reconciler: rc, Tenant: "acme", Operation: "sms",
		Send:    func(t *testing.T, order string) retrybudget.Step { return sendSMS(t, srv.URL, tr, order) },
		Lose:    func() { fake.mu.Lock(); fake.lose = true; fake.mu.Unlock() },
		Drop:    func() { fake.mu.Lock(); fake.drop = true; fake.mu.Unlock() },
		Effects: fake.created, Settle: settle, Advance: clock.Advance,
	}.Run(t, "1001", "1002", 0)
}
