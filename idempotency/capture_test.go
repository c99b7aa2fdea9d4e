package idempotency_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/idempotency"
	"github.com/retrybudget/retrybudget/ledger"
)

// stateProbe is a ResponseWriter that reads the action's record at the
// moment the status reaches the client.
type stateProbe struct {
	*httptest.ResponseRecorder
	store  ledger.Store
	key    ledger.Key
	states []ledger.State
	wrote  bool
}

func (p *stateProbe) WriteHeader(code int) {
	p.wrote = true
	rec, err := p.store.Get(context.Background(), p.key)
	if err != nil {
		p.states = append(p.states, ledger.StateAbsent)
	} else {
		p.states = append(p.states, rec.State)
	}
	p.ResponseRecorder.WriteHeader(code)
}

func (p *stateProbe) Write(b []byte) (int, error) {
	if !p.wrote {
		p.WriteHeader(http.StatusOK)
	}
	return p.ResponseRecorder.Write(b)
}

// TestStoredBeforeDelivered checks the ordering the package documents: a
// response within MaxResponseBody reaches the client only once its action
// is completed; a larger one is streamed while the action is in progress.
func TestStoredBeforeDelivered(t *testing.T) {
	for _, tt := range []struct {
		name string
		body string
		want ledger.State
	}{
		{"held back", "short", ledger.StateCompleted},
		{"streamed", strings.Repeat("x", 64), ledger.StateInProgress},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store := ledger.NewMemory(ledger.MemoryConfig{})
			guard := idempotency.New(idempotency.Config{Store: store, Tenant: testTenant, MaxResponseBody: 32})
			h := guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(tt.body)) }))
			p := &stateProbe{ResponseRecorder: httptest.NewRecorder(), store: store, key: thingsKey("k1")}
			h.ServeHTTP(p, request{}.build())
			if len(p.states) != 1 || p.states[0] != tt.want || p.Body.String() != tt.body {
				t.Errorf("state when delivered %v, body %q; want %v and the whole body", p.states, p.Body, tt.want)
			}
			if rec, _ := store.Get(context.Background(), p.key); rec.State != ledger.StateCompleted {
				t.Errorf("final state %v, want completed", rec.State)
			}
		})
	}
}

// TestCaptureWriter covers the ResponseWriter rules a guarded handler sees.
func TestCaptureWriter(t *testing.T) {
	t.Run("1xx goes out at once and the final status is stored", func(t *testing.T) {
		var informational []int
		e := newEnv(t, idempotency.Config{}, func(run int, w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Link", "</style.css>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			w.WriteHeader(http.StatusCreated)
			w.WriteHeader(http.StatusOK) // superfluous: ignored
		})
		srv := httptest.NewServer(e.mux)
		defer srv.Close()
		for range 2 {
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/things", strings.NewReader(defaultBody))
			req.Header.Set("Idempotency-Key", "k1")
			req = req.WithContext(withInformational(req.Context(), &informational))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				t.Errorf("status %d, want 201", resp.StatusCode)
			}
		}
		if len(informational) != 1 || informational[0] != http.StatusEarlyHints {
			t.Errorf("informational responses %v, want one 103 (none on the replay)", informational)
		}
	})
	t.Run("204 refuses a body", func(t *testing.T) {
		var writeErr error
		e := newEnv(t, idempotency.Config{}, func(run int, w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNoContent)
			_, writeErr = w.Write([]byte("x"))
		})
		if res := e.send(request{}); res.Code != http.StatusNoContent || res.Body.Len() != 0 || !errors.Is(writeErr, http.ErrBodyNotAllowed) {
			t.Errorf("%d %q %v", res.Code, res.Body, writeErr)
		}
		if res := e.send(request{}); res.Code != http.StatusNoContent || res.Header().Get(idempotency.HeaderReplayed) != "true" {
			t.Errorf("replay %d %v", res.Code, res.Header())
		}
	})
	t.Run("invalid status panics and fails the action", func(t *testing.T) {
		e := newEnv(t, idempotency.Config{}, failThenCreate(42, false))
		if res := e.send(request{}); !res.panicked {
			t.Error("WriteHeader(42) did not panic")
		}
		if res := e.send(request{}); res.Code != http.StatusCreated {
			t.Errorf("after the panic: %d, want the key to run again", res.Code)
		}
	})
	t.Run("write deadline reaches the connection", func(t *testing.T) {
		var deadlineErr error
		e := newEnv(t, idempotency.Config{}, func(run int, w http.ResponseWriter, r *http.Request) {
			deadlineErr = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(time.Minute))
		})
		srv := httptest.NewServer(e.mux)
		defer srv.Close()
		if a := post(srv.URL, "k1", defaultBody); a.status != http.StatusOK || deadlineErr != nil {
			t.Errorf("%+v, SetWriteDeadline: %v", a, deadlineErr)
		}
	})
	t.Run("hijack is not supported", func(t *testing.T) {
		var hijackErr error
		e := newEnv(t, idempotency.Config{}, func(run int, w http.ResponseWriter, r *http.Request) {
			_, _, hijackErr = http.NewResponseController(w).Hijack()
		})
		srv := httptest.NewServer(e.mux)
		defer srv.Close()
		if a := post(srv.URL, "k1", defaultBody); a.status != http.StatusOK || !errors.Is(hijackErr, http.ErrNotSupported) {
			t.Errorf("%+v, Hijack: %v", a, hijackErr)
		}
	})
	t.Run("negative MaxResponseBody stores only hashes", func(t *testing.T) {
		e := newEnv(t, idempotency.Config{MaxResponseBody: -1}, created)
		e.send(request{})
		res := e.send(request{})
		if res.Code != http.StatusCreated || res.Body.Len() != 0 || res.Header().Get(idempotency.HeaderBodyOmitted) != "true" {
			t.Errorf("replay %d %q %v", res.Code, res.Body, res.Header())
		}
	})
}

// TestCompleteFailureStillDelivers checks that a response whose outcome
// the store refused to record is still delivered, and the Logger told.
func TestCompleteFailureStillDelivers(t *testing.T) {
	var logs bytes.Buffer
	store := &failingComplete{Store: ledger.NewMemory(ledger.MemoryConfig{})}
	e := newEnv(t, idempotency.Config{Store: store, Logger: slog.New(slog.NewTextHandler(&logs, nil))}, created)
	res := e.send(request{})
	if res.Code != http.StatusCreated || res.Body.String() != `{"run":1}` {
		t.Errorf("%d %q, want the handler's response", res.Code, res.Body)
	}
	if !strings.Contains(logs.String(), "ledger complete failed") || strings.Contains(logs.String(), "k1") {
		t.Errorf("log %q: want the failure, without the raw key", logs.String())
	}
	// The record stays in progress: the next request is told to wait.
	if res := e.send(request{}); res.Code != http.StatusConflict {
		t.Errorf("next request: %d, want 409 pending", res.Code)
	}
	if n := store.completes.Load(); n != 1 {
		t.Errorf("Complete called %d times", n)
	}
}

// failingComplete is a store whose Complete fails, like Redis dropping
// the connection after the handler ran.
type failingComplete struct {
	ledger.Store
	completes atomic.Int32
}

func (f *failingComplete) Complete(context.Context, ledger.Key, int64, ledger.Outcome) error {
	f.completes.Add(1)
	return errDown
}

// TestPendingWhileRunning sends a second request while the first is in
// the handler, through a real server: 409 with a Retry-After of the
// PendingRetryAfter hint (no run of the operation has ended yet), not the
// lease's end, and the replay once the first is done.
func TestPendingWhileRunning(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	e := newEnv(t, idempotency.Config{Lease: 5 * time.Second}, func(run int, w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		created(run, w, r)
	})
	srv := httptest.NewServer(e.mux)
	defer srv.Close()
	first := make(chan answer, 1)
	go func() { first <- post(srv.URL, "k1", defaultBody) }()
	select {
	case <-entered:
	case <-time.After(guardTimeout):
		t.Fatal("handler never ran")
	}
	a := post(srv.URL, "k1", defaultBody)
	close(release)
	if a.status != http.StatusConflict || !strings.Contains(a.body, idempotency.TypePending) || a.retryAfter != "1" {
		t.Errorf("while running: %+v, want 409 pending with Retry-After 1", a)
	}
	if a := <-first; a.status != http.StatusCreated || a.body != `{"run":1}` {
		t.Errorf("first: %+v", a)
	}
	if a := post(srv.URL, "k1", defaultBody); a.status != http.StatusCreated || a.replayed != "true" {
		t.Errorf("after: %+v, want the replay", a)
	}
}

// withInformational returns ctx recording the status of every 1xx
// response the client receives into got.
func withInformational(ctx context.Context, got *[]int) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		Got1xxResponse: func(code int, _ textproto.MIMEHeader) error {
			*got = append(*got, code)
			return nil
		},
	})
}

// The middleware's log names an action as slogretry's Observer
// does (Identities.ActionID): not at all by default, by a keyed hash with
// an ActionKey, never by the unkeyed record ID a guess would match.
func TestLogNamesTheActionAsIdentitiesSay(t *testing.T) {
	ids := retrybudget.Identities{ActionKey: []byte("log-action-key-of-the-deployment")}
	k := thingsKey("k1")
	for _, tt := range []struct {
		name string
		ids  retrybudget.Identities
		want string
	}{
		{name: "default", want: ""},
		{name: "ActionKey", ids: ids, want: "action=" + ids.ActionID(k)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			store := &failingComplete{Store: ledger.NewMemory(ledger.MemoryConfig{})}
			e := newEnv(t, idempotency.Config{Store: store, Identities: tt.ids, Logger: slog.New(slog.NewTextHandler(&logs, nil))}, created)
			e.send(request{})
			out := logs.String()
			if !strings.Contains(out, "ledger complete failed") {
				t.Fatalf("log %q: want the failure", out)
			}
			if strings.Contains(out, k.ID()[:16]) {
				t.Errorf("log %q names the action by its unkeyed ID", out)
			}
			if got := strings.Contains(out, "action="); got != (tt.want != "") || !strings.Contains(out, tt.want) {
				t.Errorf("log %q; want %q", out, tt.want)
			}
		})
	}
}
