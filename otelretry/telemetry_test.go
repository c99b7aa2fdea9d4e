package otelretry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/budget"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/otelretry"
)

var (
	classCapacity = otelretry.ClassKey.String("capacity")
	classSuccess  = otelretry.ClassKey.String("success")
	classServer   = otelretry.ClassKey.String("server")
	methodPost    = semconv.HTTPRequestMethodKey.String("POST")
)

// TestRetryThenSuccess drives a real Transport against a provider answering
// 503, 429, then 200, and reads back three attempts, two retries by class,
// and three attempt spans under the caller's span with resend counts 1 and
// 2 on the retries.
func TestRetryThenSuccess(t *testing.T) {
	h := newHarness(t, otelretry.Config{Identities: retrybudget.Identities{ShowIdentities: true}})
	srv := server(t, "503", "429:0", "200")
	host := semconv.ServerAddress("127.0.0.1")

	ctx, parent := h.tp.Tracer("caller").Start(context.Background(), "charge")
	code, err := do(ctx, t, srv, retrybudget.Config{Observer: h.tel.Observer()})
	parent.End()
	if err != nil || code != 200 {
		t.Fatalf("got %d, %v; want 200", code, err)
	}

	ms := h.metrics(t)
	for _, c := range []struct {
		name  string
		attrs []attribute.KeyValue
		want  int64
	}{
		{"retrybudget.attempts", nil, 3},
		{"retrybudget.attempts", []attribute.KeyValue{methodPost, host, classCapacity, semconv.HTTPResponseStatusCode(503)}, 1},
		{"retrybudget.attempts", []attribute.KeyValue{classCapacity, semconv.HTTPResponseStatusCode(429)}, 1},
		{"retrybudget.attempts", []attribute.KeyValue{classSuccess, semconv.HTTPResponseStatusCode(200)}, 1},
		{"retrybudget.retries", nil, 2},
		{"retrybudget.retries", []attribute.KeyValue{methodPost, host, classCapacity}, 2},
		{"retrybudget.giveups", nil, 0},
		{"retrybudget.budget.refusals", nil, 0},
		{"retrybudget.cooldowns", nil, 0},
	} {
		if got := count(t, ms, c.name, c.attrs...); got != c.want {
			t.Errorf("%s%v = %d; want %d", c.name, c.attrs, got, c.want)
		}
	}
	if n, _ := histogram(t, ms, "retrybudget.attempt.duration", methodPost, host); n != 3 {
		t.Errorf("retrybudget.attempt.duration count = %d; want 3", n)
	}
	if u := ms["retrybudget.attempt.duration"].Unit; u != "s" {
		t.Errorf("retrybudget.attempt.duration unit %q; want s", u)
	}

	var attempts []sdktrace.ReadOnlySpan
	var caller sdktrace.ReadOnlySpan
	for _, s := range h.spans.Ended() {
		if s.Name() == "charge" {
			caller = s
		} else {
			attempts = append(attempts, s)
		}
	}
	if len(attempts) != 3 || caller == nil {
		t.Fatalf("%d attempt spans, caller span %v; want 3 and the caller's", len(attempts), caller != nil)
	}
	wantStatus := []int64{503, 429, 200}
	for i, s := range attempts {
		if s.Name() != "POST" || s.SpanKind() != trace.SpanKindClient {
			t.Errorf("span %d: %q %v; want \"POST\" client", i, s.Name(), s.SpanKind())
		}
		if s.Parent().SpanID() != caller.SpanContext().SpanID() || s.SpanContext().TraceID() != caller.SpanContext().TraceID() {
			t.Errorf("span %d is not a child of the caller's span", i)
		}
		if !s.StartTime().Before(s.EndTime()) {
			t.Errorf("span %d: start %v not before end %v", i, s.StartTime(), s.EndTime())
		}
		if i > 0 && s.StartTime().Before(attempts[i-1].EndTime()) {
			t.Errorf("span %d starts before span %d ended", i, i-1)
		}
		rc, ok := attr(s, semconv.HTTPRequestResendCountKey)
		switch {
		case i == 0 && ok:
			t.Errorf("span 0 has http.request.resend_count %v; want none on the first send", rc.AsInt64())
		case i > 0 && (!ok || rc.AsInt64() != int64(i)):
			t.Errorf("span %d: http.request.resend_count = %v (set %v); want %d", i, rc.AsInt64(), ok, i)
		}
		if v, _ := attr(s, semconv.HTTPResponseStatusCodeKey); v.AsInt64() != wantStatus[i] {
			t.Errorf("span %d: status code %d; want %d", i, v.AsInt64(), wantStatus[i])
		}
		if v, _ := attr(s, otelretry.KeyKey); v.AsString() != "order-1042" {
			t.Errorf("span %d: key %q; want order-1042", i, v.AsString())
		}
		if v, _ := attr(s, semconv.URLFullKey); v.AsString() != srv.URL+"/v1/charges" {
			t.Errorf("span %d: url.full %q; want %q", i, v.AsString(), srv.URL+"/v1/charges")
		}
		et, hasET := attr(s, semconv.ErrorTypeKey)
		if i < 2 {
			if s.Status().Code != codes.Error || et.AsString() != fmt.Sprint(wantStatus[i]) {
				t.Errorf("span %d: status %v, error.type %q; want Error and %d", i, s.Status(), et.AsString(), wantStatus[i])
			}
		} else if s.Status().Code != codes.Unset || hasET {
			t.Errorf("span %d: status %v, error.type %q; want Unset and none", i, s.Status(), et.AsString())
		}
	}
	var retries int
	for _, e := range caller.Events() {
		if e.Name == "retrybudget.retry" {
			retries++
		}
	}
	if retries != 2 {
		t.Errorf("caller span has %d retrybudget.retry events; want 2", retries)
	}
}

// TestGiveUp checks give-ups by reason, with the class and whether the call
// may have been applied.
func TestGiveUp(t *testing.T) {
	tests := []struct {
		name     string
		statuses []string
		attempts int
		want     []attribute.KeyValue
	}{
		{"attempts exhausted", []string{"500"}, 2, []attribute.KeyValue{classServer,
			otelretry.ReasonKey.String("attempts_exhausted"), otelretry.MaybeAppliedKey.Bool(true)}},
		{"rejected", []string{"429", "422"}, 4, []attribute.KeyValue{otelretry.ClassKey.String("business"),
			otelretry.ReasonKey.String("rejected"), otelretry.MaybeAppliedKey.Bool(false)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, otelretry.Config{})
			srv := server(t, tt.statuses...)
			if _, err := do(context.Background(), t, srv, retrybudget.Config{
				MaxAttempts: tt.attempts, Observer: h.tel.Observer()}); err != nil {
				t.Fatal(err)
			}
			ms := h.metrics(t)
			if got := count(t, ms, "retrybudget.giveups"); got != 1 {
				t.Errorf("giveups = %d; want 1", got)
			}
			if got := count(t, ms, "retrybudget.giveups", append(tt.want, methodPost)...); got != 1 {
				t.Errorf("giveups%v = %d; want 1", tt.want, got)
			}
		})
	}
}

// TestBudgetRefusal uses a budget that allows no retry at all: the first
// failure is refused and the call gives up with budget_exhausted.
func TestBudgetRefusal(t *testing.T) {
	h := newHarness(t, otelretry.Config{})
	srv := server(t, "503")
	_, err := do(context.Background(), t, srv, retrybudget.Config{
		Observer: h.tel.Observer(),
		Budget:   budget.NewLocal(budget.Config{Percent: -1, MinRetriesPerSec: -1}),
	})
	if err != nil {
		t.Fatal(err)
	}
	ms := h.metrics(t)
	dest := otelretry.DestinationKey.String(strings.TrimPrefix(srv.URL, "http://"))
	for _, c := range []struct {
		name  string
		attrs []attribute.KeyValue
		want  int64
	}{
		{"retrybudget.budget.refusals", []attribute.KeyValue{dest, otelretry.BudgetFallbackKey.Bool(false)}, 1},
		{"retrybudget.giveups", []attribute.KeyValue{otelretry.ReasonKey.String("budget_exhausted"), classCapacity}, 1},
		{"retrybudget.attempts", nil, 1},
		{"retrybudget.retries", nil, 0},
	} {
		if got := count(t, ms, c.name, c.attrs...); got != c.want {
			t.Errorf("%s%v = %d; want %d", c.name, c.attrs, got, c.want)
		}
	}
}

// TestLimiterWaitAndCooldown checks the limiter's waits, in seconds, and
// the cooldown a 429 with Retry-After starts.
func TestLimiterWaitAndCooldown(t *testing.T) {
	h := newHarness(t, otelretry.Config{})
	srv := server(t, "429:0", "200")
	lim := &stepLimiter{waits: []time.Duration{2 * time.Millisecond, 3 * time.Millisecond}}
	ctx, parent := h.tp.Tracer("caller").Start(context.Background(), "charge")
	code, err := do(ctx, t, srv, retrybudget.Config{Observer: h.tel.Observer(), Limiter: lim})
	parent.End()
	if err != nil || code != 200 {
		t.Fatalf("got %d, %v; want 200", code, err)
	}
	ms := h.metrics(t)
	boundary := otelretry.BoundaryKey.String(strings.TrimPrefix(srv.URL, "http://"))
	n, sum := histogram(t, ms, "retrybudget.limiter.wait", boundary, otelretry.LimiterReasonKey.String("rate"),
		otelretry.LimiterFallbackKey.Bool(false))
	if n != 2 || sum < 0.0049 || sum > 0.0051 {
		t.Errorf("retrybudget.limiter.wait: count %d, sum %vs; want 2 and 0.005s", n, sum)
	}
	if got := count(t, ms, "retrybudget.cooldowns", boundary); got != 1 || len(lim.cooldowns) != 1 {
		t.Errorf("retrybudget.cooldowns = %d (limiter saw %d); want 1", got, len(lim.cooldowns))
	}
	events := map[string]int{}
	for _, s := range h.spans.Ended() {
		if s.Name() == "charge" {
			for _, e := range s.Events() {
				events[e.Name]++
			}
		}
	}
	if events["retrybudget.limiter.wait"] != 2 || events["retrybudget.cooldown"] != 1 {
		t.Errorf("caller span events %v; want 2 limiter waits and 1 cooldown", events)
	}
}

// TestReasonCodes feeds GiveUp every reason the Transport can report,
// wrapped as it may be, and checks the stable code in the metric.
func TestReasonCodes(t *testing.T) {
	tests := []struct {
		reason error
		want   string
	}{
		{retrybudget.ErrAttemptsExhausted, "attempts_exhausted"},
		{retrybudget.ErrDeadline, "deadline"},
		{retrybudget.ErrWaitTooLong, "wait_too_long"},
		{retrybudget.ErrUncertain, "uncertain"},
		{retrybudget.ErrRejected, "rejected"},
		{retrybudget.ErrBudgetExhausted, "budget_exhausted"},
		{retrybudget.ErrThrottled, "throttled"},
		{retrybudget.ErrRateLimited, "rate_limited"},
		{retrybudget.ErrLimiter, "limiter"},
		{retrybudget.ErrBodyNotReplayable, "body_not_replayable"},
		{retrybudget.ErrPending, "pending"},
		{retrybudget.ErrConflict, "conflict"},
		{retrybudget.ErrLedger, "ledger"},
		{retrybudget.ErrInvalidAction, "invalid_action"},
		{retrybudget.ErrBodyUnreadable, "body_unreadable"},
		{context.Canceled, "canceled"},
		{fmt.Errorf("wrapped: %w", context.DeadlineExceeded), "deadline_exceeded"},
		{errors.New("something new"), "other"},
	}
	h := newHarness(t, otelretry.Config{})
	obs := h.tel.Observer()
	req, _ := http.NewRequest("GET", "https://api.example.com/v1/balance", nil)
	for _, tt := range tests {
		obs.GiveUp(retrybudget.GiveUpEvent{Request: req, Outcome: retrybudget.Outcome{Reason: tt.reason}})
	}
	ms := h.metrics(t)
	for _, tt := range tests {
		if got := count(t, ms, "retrybudget.giveups", otelretry.ReasonKey.String(tt.want)); got != 1 {
			t.Errorf("reason %v: giveups{%s} = %d; want 1", tt.reason, tt.want, got)
		}
	}
}

// TestLedger sends one action three times through a Transport with a
// ledger: created, then replayed, then changed (a conflict); and reports a
// store failure.
func TestLedger(t *testing.T) {
	h := newHarness(t, otelretry.Config{})
	srv := server(t, "201")
	tr := retrybudget.New(retrybudget.Config{
		Base:     srv.Client().Transport,
		Ledger:   retrybudget.LedgerConfig{Store: ledger.NewMemory(ledger.MemoryConfig{})},
		Observer: h.tel.Observer(),
	})
	ctx, parent := h.tp.Tracer("caller").Start(context.Background(), "charges")
	ctx = retrybudget.WithAction(ctx, retrybudget.Action{Tenant: "acme", Operation: "charge", Key: "order-1"})
	for _, body := range []string{`{"amount":100}`, `{"amount":100}`, `{"amount":999}`} {
		req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/charges", strings.NewReader(body))
		if resp, err := tr.RoundTrip(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/charges", nil)
	h.tel.Observer().Ledger(retrybudget.LedgerEvent{Request: req, Op: "complete",
		Action: retrybudget.Action{Tenant: "acme", Operation: "charge", Key: "order-2"},
		Err:    &url.Error{Op: "Post", URL: "https://ledger.internal/?token=secret", Err: errors.New("i/o timeout")}})
	parent.End()

	ms := h.metrics(t)
	charge := otelretry.OperationKey.String("charge")
	for _, c := range []struct {
		name  string
		attrs []attribute.KeyValue
		want  int64
	}{
		{"retrybudget.attempts", nil, 1},
		{"retrybudget.ledger.replays", []attribute.KeyValue{charge, methodPost}, 1},
		{"retrybudget.ledger.conflicts", []attribute.KeyValue{charge}, 1},
		{"retrybudget.ledger.errors", []attribute.KeyValue{charge, otelretry.LedgerOpKey.String("complete")}, 1},
		{"retrybudget.giveups", []attribute.KeyValue{otelretry.ReasonKey.String("conflict")}, 1},
	} {
		if got := count(t, ms, c.name, c.attrs...); got != c.want {
			t.Errorf("%s%v = %d; want %d", c.name, c.attrs, got, c.want)
		}
	}
	var verdicts []string
	for _, s := range h.spans.Ended() {
		if s.Name() != "charges" {
			continue
		}
		for _, e := range s.Events() {
			switch e.Name {
			case "retrybudget.ledger":
				for _, kv := range e.Attributes {
					if kv.Key == otelretry.VerdictKey {
						verdicts = append(verdicts, kv.Value.AsString())
					}
				}
			case "retrybudget.ledger.error":
				if fmt.Sprint(e.Attributes) != fmt.Sprint([]attribute.KeyValue{charge,
					otelretry.LedgerOpKey.String("complete"), semconv.ExceptionMessageKey.String("Post: i/o timeout")}) {
					t.Errorf("ledger error event %v", e.Attributes)
				}
				verdicts = append(verdicts, "error")
			}
		}
	}
	if fmt.Sprint(verdicts) != "[created replayed conflict error]" {
		t.Errorf("ledger span events %v; want created, replayed, conflict, error", verdicts)
	}
}

// TestNilProvidersRecordNothing checks that the zero Config and
// NewObserver(nil, nil) work, and that their callbacks are safe to call.
func TestNilProvidersRecordNothing(t *testing.T) {
	tel, err := otelretry.New(otelretry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	obs, err := otelretry.NewObserver(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", "https://api.example.com/", nil)
	for _, o := range []retrybudget.Observer{tel.Observer(), obs} {
		o.Attempt(retrybudget.AttemptEvent{Request: req, Attempt: 2, Class: retrybudget.ClassServer, StatusCode: 500})
		o.Retry(retrybudget.RetryEvent{Request: req, Attempt: 2})
		o.GiveUp(retrybudget.GiveUpEvent{Request: req, Outcome: retrybudget.Outcome{Reason: retrybudget.ErrRejected}})
		o.Budget(retrybudget.BudgetEvent{Request: req})
		o.Limited(retrybudget.LimitEvent{Request: req})
		o.Cooldown(retrybudget.LimitEvent{Request: req})
		o.Ledger(retrybudget.LedgerEvent{Request: req, Verdict: ledger.VerdictReplayed})
		o.Ledger(retrybudget.LedgerEvent{Request: req, Op: "complete", Err: errors.New("down")})
	}
}

// TestMethods checks span names and method attributes for known and
// unknown methods, and that KnownMethods overrides the list.
func TestMethods(t *testing.T) {
	tests := []struct {
		name                 string
		known                []string
		method               string
		wantName, wantMethod string
		wantOriginal         string
	}{
		{"known", nil, "PATCH", "PATCH", "PATCH", ""},
		{"empty means GET", nil, "", "GET", "GET", ""},
		{"unknown", nil, "PURGE", "HTTP", "_OTHER", "PURGE"},
		{"lower case is another method", nil, "post", "HTTP", "_OTHER", "post"},
		{"made known", []string{"PURGE"}, "PURGE", "PURGE", "PURGE", ""},
		{"override replaces the list", []string{"PURGE"}, "GET", "HTTP", "_OTHER", "GET"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, otelretry.Config{KnownMethods: tt.known})
			req, _ := http.NewRequest("GET", "https://api.example.com/v1/cache", nil)
			req.Method = tt.method
			h.tel.Observer().Attempt(retrybudget.AttemptEvent{Request: req, Attempt: 1, StatusCode: 200})
			spans := h.spans.Ended()
			if len(spans) != 1 {
				t.Fatalf("%d spans; want 1", len(spans))
			}
			s := spans[0]
			m, _ := attr(s, semconv.HTTPRequestMethodKey)
			orig, _ := attr(s, semconv.HTTPRequestMethodOriginalKey)
			if s.Name() != tt.wantName || m.AsString() != tt.wantMethod || orig.AsString() != tt.wantOriginal {
				t.Errorf("span %q, method %q, original %q; want %q, %q, %q",
					s.Name(), m.AsString(), orig.AsString(), tt.wantName, tt.wantMethod, tt.wantOriginal)
			}
			if got := count(t, h.metrics(t), "retrybudget.attempts", semconv.HTTPRequestMethodKey.String(tt.wantMethod)); got != 1 {
				t.Errorf("attempts{method=%s} = %d; want 1", tt.wantMethod, got)
			}
		})
	}
}

// TestSpanURL checks server.address, server.port and url.full, which keeps
// neither the query string nor userinfo, nor with OmitPath the path.
func TestSpanURL(t *testing.T) {
	tests := []struct {
		name     string
		omitPath bool
		raw      string
		wantURL  string
		wantPort int64
	}{
		{"https default port", false, "https://user:pw@api.example.com/v1/charges?token=secret#frag", "https://api.example.com/v1/charges", 443},
		{"explicit port", false, "http://localhost:8080/hooks/a%2Fb?x=1", "http://localhost:8080/hooks/a%2Fb", 8080},
		{"omit path", true, "https://hooks.example.com/services/T0/B0/secret", "https://hooks.example.com", 443},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, otelretry.Config{OmitPath: tt.omitPath})
			req, _ := http.NewRequest("POST", tt.raw, nil)
			h.tel.Observer().Attempt(retrybudget.AttemptEvent{Request: req, Attempt: 1, StatusCode: 201})
			s := h.spans.Ended()[0]
			u, _ := attr(s, semconv.URLFullKey)
			port, _ := attr(s, semconv.ServerPortKey)
			addr, _ := attr(s, semconv.ServerAddressKey)
			if u.AsString() != tt.wantURL || port.AsInt64() != tt.wantPort || addr.AsString() != req.URL.Hostname() {
				t.Errorf("url.full %q, server.port %d, server.address %q; want %q, %d, %q",
					u.AsString(), port.AsInt64(), addr.AsString(), tt.wantURL, tt.wantPort, req.URL.Hostname())
			}
		})
	}
}

// TestNeverRecordsCredentials sends a request carrying secrets in every
// place a request can carry them, through a provider that fails with a
// *url.Error quoting the URL, and checks no span, event or metric holds
// them.
func TestNeverRecordsCredentials(t *testing.T) {
	h := newHarness(t, otelretry.Config{})
	calls := 0
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		calls++
		if calls == 1 {
			return nil, fmt.Errorf("base: %w", &url.Error{Op: "Post", URL: req.URL.String(),
				Err: errors.New("connection reset by peer")})
		}
		return &http.Response{StatusCode: 429, Request: req,
			Header: http.Header{"Retry-After": {"0"}, "Set-Cookie": {"s=secret"}},
			Body:   io.NopCloser(strings.NewReader(`{"token":"secret"}`))}, nil
	})
	ctx, parent := h.tp.Tracer("caller").Start(context.Background(), "charge")
	client := &http.Client{Transport: retrybudget.New(retrybudget.Config{
		Base: base, BaseDelay: time.Millisecond, MaxAttempts: 2, Observer: h.tel.Observer()})}
	req, _ := http.NewRequestWithContext(ctx, "POST", "https://user:pw@api.example.com/v1/charges?token=secret",
		strings.NewReader(`{"card":"secret"}`))
	req.Header.Set("Authorization", "Bearer secret")
	req.Header.Set("Cookie", "c=secret")
	req.Header.Set("Idempotency-Key", "order-7")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	parent.End()

	var b strings.Builder
	for _, s := range h.spans.Ended() {
		fmt.Fprintf(&b, "%s %v %v\n", s.Name(), s.Attributes(), s.Status())
		for _, e := range s.Events() {
			fmt.Fprintf(&b, "  %s %v\n", e.Name, e.Attributes)
		}
	}
	fmt.Fprintf(&b, "%+v\n", h.metrics(t))
	out := b.String()
	if !strings.Contains(out, "connection reset by peer") {
		t.Errorf("the transport error is missing from the spans:\n%s", out)
	}
	for _, secret := range []string{"secret", "pw", "token"} {
		if strings.Contains(out, secret) {
			t.Errorf("telemetry contains %q:\n%s", secret, out)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// The copy of a hedged attempt that the Transport cancelled because the
// other answered first is counted as "canceled", and its span is not an
// error: it did not fail.
func TestHedgeCanceledCopyIsNoFailure(t *testing.T) {
	h := newHarness(t, otelretry.Config{})
	req, _ := http.NewRequest(http.MethodGet, "http://api.example/items/1", nil)
	obs := h.tel.Observer()
	obs.Attempt(retrybudget.AttemptEvent{Request: req, Attempt: 1, Class: retrybudget.ClassMaybeSent, Err: context.Canceled,
		Canceled: true, Start: time.Now(), Duration: 30 * time.Millisecond})
	obs.Attempt(retrybudget.AttemptEvent{Request: req, Attempt: 2, Class: retrybudget.ClassSuccess, StatusCode: 200,
		Hedge: true, Start: time.Now(), Duration: 20 * time.Millisecond})

	ms := h.metrics(t)
	if got := count(t, ms, "retrybudget.attempts", otelretry.ClassKey.String("canceled")); got != 1 {
		t.Errorf("canceled attempts = %d; want 1", got)
	}
	if got := count(t, ms, "retrybudget.attempts", otelretry.ClassKey.String("transport-maybe-sent")); got != 0 {
		t.Errorf("transport-maybe-sent attempts = %d; want 0: the canceled copy is not a failure", got)
	}
	spans := h.spans.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans; want 2", len(spans))
	}
	if st := spans[0].Status(); st.Code == codes.Error {
		t.Errorf("the canceled copy's span has status %v; want no error", st)
	}
	if _, ok := attr(spans[0], semconv.ErrorTypeKey); ok {
		t.Errorf("the canceled copy's span has an error.type")
	}
}
