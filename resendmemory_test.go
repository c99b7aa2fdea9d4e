package retrybudget

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Two actions may send identical requests; an SDK's numbered re-send of one
// is answered with that action's own give-up, never with the other's.
func TestSDKResendIsAnsweredWithItsOwnActionsGiveUp(t *testing.T) {
	// X's send is lost (it may have been applied); Y's is refused with a
	// long Retry-After.
	p := newProvider(t, lost, status(429, "Retry-After", "120"))
	tr, _ := newFakeTransport(Config{OmitKey: true})
	count := func(n string) http.Header { return http.Header{"X-Stainless-Retry-Count": {n}} }
	x := WithAction(context.Background(), Action{Operation: "complete", Key: "x"})
	y := WithAction(context.Background(), Action{Operation: "complete", Key: "y"})
	if _, err := post(x, t, tr, p.URL, count("0")); !errors.Is(err, ErrUncertain) {
		t.Fatalf("X's first send: %v, want ErrUncertain", err)
	}
	resp, err := post(y, t, tr, p.URL, count("0"))
	if err != nil {
		t.Fatal(err)
	}
	if o := finalOutcome(t, resp); !errors.Is(o.Reason, ErrWaitTooLong) {
		t.Fatalf("Y's first send: %+v, want ErrWaitTooLong", o)
	}
	_, err = post(x, t, tr, p.URL, count("1"))
	var e *Error
	if !errors.As(err, &e) || !e.Repeated || !errors.Is(err, ErrUncertain) {
		t.Fatalf("X's re-send: %v, want X's own give-up: ErrUncertain, repeated", err)
	}
	if n := len(p.requests()); n != 2 {
		t.Fatalf("%d arrivals, want X's and Y's first sends only", n)
	}
}

// roundTripFunc is an http.RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// floodBase answers every request to flood.example with a 503 at once, in
// process, and sends the rest to the network.
func floodBase(t *testing.T) http.RoundTripper {
	real := &http.Transport{}
	t.Cleanup(real.CloseIdleConnections)
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.URL.Host != "flood.example" {
			return real.RoundTrip(r)
		}
		if r.Body != nil {
			r.Body.Close()
		}
		return &http.Response{StatusCode: 503, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
	})
}

// flood gives up n calls to flood.example, each under a key of its own, so
// that each is remembered for its SDK's re-sends.
func flood(t *testing.T, tr http.RoundTripper, n int, prefix string) {
	t.Helper()
	for i := range n {
		resp, err := post(context.Background(), t, tr, "http://flood.example/", http.Header{"Idempotency-Key": {prefix + strconv.Itoa(i)}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
}

// Another caller's flood of failing calls, many times what the give-up
// memory holds, never evicts a live give-up whose outcome is uncertain: the
// SDK's re-send of that call is still answered from it, not sent.
func TestAFloodOfGiveUpsKeepsAnUncertainOne(t *testing.T) {
	p := newProvider(t, lost)
	tr, _ := newFakeTransport(Config{Base: floodBase(t), MaxAttempts: 1})
	count := func(n string) http.Header { return http.Header{"X-Stainless-Retry-Count": {n}} }
	if _, err := post(context.Background(), t, tr, p.URL, count("0")); !errors.Is(err, ErrUncertain) {
		t.Fatalf("first send: %v, want ErrUncertain", err)
	}
	flood(t, tr, 3*maxGiveUps, "flood-")
	_, err := post(context.Background(), t, tr, p.URL, count("1"))
	var e *Error
	if !errors.As(err, &e) || !e.Repeated || !errors.Is(err, ErrUncertain) {
		t.Fatalf("re-send after the flood: %v, want the give-up's ErrUncertain, repeated", err)
	}
	if n := len(p.requests()); n != 1 {
		t.Fatalf("%d arrivals, want 1", n)
	}
}

// A flood of uncertain give-ups fills only its own share of the memory:
// past the share, the newcomer is not remembered and its Outcome says so,
// while every give-up already remembered, the flood's own and another
// destination's, still answers its SDK's re-sends.
func TestAFloodOfUncertainGiveUpsFillsOnlyItsOwnShare(t *testing.T) {
	p := newProvider(t, lost)
	tr, _ := newFakeTransport(Config{Base: floodBase(t)})
	count := func(n string) http.Header { return http.Header{"X-Stainless-Retry-Count": {n}} }
	if _, err := post(context.Background(), t, tr, p.URL, count("0")); !errors.Is(err, ErrUncertain) {
		t.Fatalf("first send: %v, want ErrUncertain", err)
	}
	// Each flood call is a POST without a key that got a 503: it may have
	// been applied and must not be repeated.
	floodCall := func(i int, n string) Outcome {
		resp, err := post(context.Background(), t, tr, "http://flood.example/"+strconv.Itoa(i), count(n))
		if err != nil {
			t.Fatal(err)
		}
		return finalOutcome(t, resp)
	}
	for i := range maxScopeGiveUps + 1 {
		o := floodCall(i, "0")
		if !errors.Is(o.Reason, ErrUncertain) {
			t.Fatalf("flood call %d: %+v, want ErrUncertain", i, o)
		}
		if want := i == maxScopeGiveUps; o.NotRemembered != want {
			t.Fatalf("flood call %d: NotRemembered %v, want %v", i, o.NotRemembered, want)
		}
	}
	if o := floodCall(0, "1"); !o.Repeated {
		t.Fatalf("re-send of the flood's first call: %+v, want it answered from its give-up", o)
	}
	var e *Error
	if _, err := post(context.Background(), t, tr, p.URL, count("1")); !errors.As(err, &e) || !e.Repeated || !errors.Is(err, ErrUncertain) {
		t.Fatalf("re-send after the flood: %v, want the give-up's ErrUncertain, repeated", err)
	}
	if n := len(p.requests()); n != 1 {
		t.Fatalf("%d arrivals, want 1", n)
	}
}

// The memory makes room from give-ups that may be repeated, oldest first,
// and from expired ones; it refuses a newcomer rather than evict a live
// uncertain give-up, within a scope and in all.
func TestGiveUpMemoryNeverEvictsALiveUncertainGiveUp(t *testing.T) {
	now := time.Now()
	live := func(kept bool) *giveUp { return &giveUp{until: now.Add(resendWindow), kept: kept} }
	g := &giveUps{limit: 4, scopeLimit: 2}
	put := func(id, scope string, e *giveUp) bool { return g.put([]string{id}, scope, e, now) }
	has := func(id string) bool { return g.get([]string{id}, now) != nil }

	// A scope's spare give-ups make room, oldest first.
	put("a1", "a", live(false))
	put("a2", "a", live(false))
	if !put("a3", "a", live(true)) || has("a1") || !has("a2") {
		t.Fatal("a full scope did not make room from its oldest spare give-up")
	}
	if !put("a4", "a", live(true)) || has("a2") {
		t.Fatal("a full scope did not make room from its last spare give-up")
	}
	// Now scope a holds nothing but uncertain give-ups.
	if put("a5", "a", live(false)) || !has("a3") || !has("a4") || has("a5") {
		t.Fatal("a scope full of uncertain give-ups evicted one or took the newcomer")
	}
	// An expired uncertain give-up at the scope's front makes room.
	short := &giveUp{until: now.Add(time.Second), kept: true}
	if !put("b1", "b", short) || !put("b2", "b", live(true)) {
		t.Fatal("scope b refused room it had")
	}
	if g.put([]string{"b3"}, "b", live(true), now.Add(2*time.Second)) != true || has("b1") {
		t.Fatal("an expired uncertain give-up did not make room")
	}
	// The memory in all (4) holds a3, a4, b2 and b3, all uncertain:
	// another scope's newcomer is refused.
	if put("c1", "c", live(false)) {
		t.Fatal("a memory full of uncertain give-ups took a newcomer")
	}
	for _, id := range []string{"a3", "a4", "b2", "b3"} {
		if !has(id) {
			t.Fatalf("%s evicted", id)
		}
	}
}

// Making room may empty the newcomer's own scope: no empty scope is kept,
// and the scopes hold exactly what the memory does.
func TestGiveUpMemoryCountsStayTrueWhenRoomEmptiesAScope(t *testing.T) {
	now := time.Now()
	spare := func() *giveUp { return &giveUp{until: now.Add(resendWindow)} }
	g := &giveUps{limit: 2, scopeLimit: 1}
	check := func(step string) {
		t.Helper()
		n := 0
		for name, s := range g.scopes {
			if s.len() <= 0 {
				t.Fatalf("%s: scope %q kept though empty", step, name)
			}
			n += s.len()
		}
		if n != g.order.Len() || len(g.ids) != g.order.Len() {
			t.Fatalf("%s: scopes count %d, memory holds %d under %d ids", step, n, g.order.Len(), len(g.ids))
		}
	}
	for i, p := range []struct{ id, scope string }{{"a1", "a"}, {"a2", "a"}, {"b1", "b"}, {"c1", "c"}, {"a3", "a"}, {"a4", "a"}} {
		if !g.put([]string{p.id}, p.scope, spare(), now) {
			t.Fatalf("put %d (%s) refused", i, p.id)
		}
		check(p.id)
		if g.get([]string{p.id}, now) == nil {
			t.Fatalf("%s not remembered", p.id)
		}
	}
}

// hostBase answers every request whose host ends in suffix with
// answer(r), in process, and sends the rest to the network.
func hostBase(t *testing.T, suffix string, answer func(*http.Request) *http.Response) http.RoundTripper {
	real := &http.Transport{}
	t.Cleanup(real.CloseIdleConnections)
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if !strings.HasSuffix(r.URL.Host, suffix) {
			return real.RoundTrip(r)
		}
		if r.Body != nil {
			r.Body.Close()
		}
		resp := answer(r)
		resp.Request = r
		return resp, nil
	})
}

// pinned returns the bytes of response headers and bodies the give-up
// memory holds.
func pinned(g *giveUps) (n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for el := g.order.Front(); el != nil; el = el.Next() {
		e := el.Value.(*memo).g
		n += len(e.body)
		for k, vs := range e.header {
			for _, v := range vs {
				n += len(k) + len(v)
			}
		}
	}
	return n
}

// A destination a caller chooses (a webhook URL, an "OpenAI-compatible"
// base URL) may answer with megabytes of headers, or with a 64 KiB body to
// every call: the give-up memory keeps a bounded part of each give-up, and
// bounded bytes in all, yet still answers every re-send.
func TestGiveUpMemoryPinsBoundedBytes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		calls  int
		header int // bytes of headers per answer
		body   int // bytes of body per answer
		limit  int // bytes the memory may pin
	}{
		{"4 MiB of headers", 64, 4 << 20, 0, 64 * resendHeaderLimit},
		{"64 KiB bodies", 1_000, 0, resendBodyLimit, maxScopeGiveUpBytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := hostBase(t, ".hostile.example", func(*http.Request) *http.Response {
				h := http.Header{"Content-Type": {"application/json"}}
				for i := 0; i < tc.header; i += 64 << 10 {
					h.Set("X-Pad-"+strconv.Itoa(i), strings.Repeat("x", 64<<10)) // a fresh string per answer, as off the wire
				}
				body := strings.Repeat("b", tc.body)
				return &http.Response{StatusCode: 400, Header: h, Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body))}
			})
			tr, _ := newFakeTransport(Config{Base: base})
			send := func(i int, n string) Outcome {
				resp, err := post(context.Background(), t, tr, "http://api.hostile.example/v1/hook/"+strconv.Itoa(i), http.Header{
					"Idempotency-Key": {"call-" + strconv.Itoa(i)}, "X-Stainless-Retry-Count": {n}})
				if err != nil {
					t.Fatal(err)
				}
				return finalOutcome(t, resp)
			}
			for i := range tc.calls {
				if o := send(i, "0"); o.NotRemembered {
					t.Fatalf("call %d not remembered", i)
				}
			}
			n := pinned(&tr.policy.gaveUp)
			t.Logf("%d give-ups pin %d bytes (%.1f MiB)", tc.calls, n, float64(n)/(1<<20))
			if n > tc.limit {
				t.Fatalf("%d give-ups pin %d bytes, want at most %d", tc.calls, n, tc.limit)
			}
			for _, i := range []int{0, tc.calls - 1} {
				if o := send(i, "1"); !o.Repeated {
					t.Fatalf("re-send of call %d: %+v, want it answered from its give-up", i, o)
				}
			}
		})
	}
}

// Other scopes' uncertain give-ups, which must be kept, fill the memory
// only up to what the scopes past their reserve may take: a newcomer scope
// still has room for its own uncertain give-up, and its SDK's re-send of
// the POST is answered from it, not sent a second time.
func TestGiveUpMemoryKeepsRoomForEveryScope(t *testing.T) {
	const scopes = maxGiveUps / maxScopeGiveUps
	base := hostBase(t, ".flood.example", func(*http.Request) *http.Response {
		return &http.Response{StatusCode: 503, Header: http.Header{}, Body: http.NoBody}
	})
	tr, _ := newFakeTransport(Config{Base: base})
	count := func(n string) http.Header { return http.Header{"X-Stainless-Retry-Count": {n}} }
	// Each flood call is a POST without a key that got a 503: it may have
	// been applied and must not be repeated.
	for s := range scopes {
		for i := range maxScopeGiveUps {
			resp, err := post(context.Background(), t, tr, "http://h"+strconv.Itoa(s)+".flood.example/"+strconv.Itoa(s)+"/"+strconv.Itoa(i), count("0"))
			if err != nil {
				t.Fatal(err)
			}
			if o := finalOutcome(t, resp); !errors.Is(o.Reason, ErrUncertain) {
				t.Fatalf("flood call %d/%d: %+v, want ErrUncertain", s, i, o)
			}
		}
	}
	p := newProvider(t, lost)
	_, err := post(context.Background(), t, tr, p.URL, count("0"))
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrUncertain) {
		t.Fatalf("victim's first send: %v, want ErrUncertain", err)
	}
	if e.NotRemembered {
		t.Errorf("victim's uncertain give-up not remembered")
	}
	_, err = post(context.Background(), t, tr, p.URL, count("1"))
	if !errors.As(err, &e) || !e.Repeated || !errors.Is(err, ErrUncertain) {
		t.Errorf("victim's re-send: %v, want its give-up's ErrUncertain, repeated", err)
	}
	if n := len(p.requests()); n != 1 {
		t.Fatalf("%d arrivals of the victim's POST, want 1", n)
	}
}
