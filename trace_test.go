package retrybudget

import (
	"context"
	"net/http/httptrace"
	"sync/atomic"
	"testing"
	"time"
)

func TestTraceContextAnswersTheTraceAndDelegatesTheRest(t *testing.T) {
	type key struct{}
	parent, cancel := context.WithDeadline(context.WithValue(context.Background(), key{}, "v"), time.Now().Add(time.Hour))
	var tr attemptTrace
	ctx := tr.context(parent)
	if got := httptrace.ContextClientTrace(ctx); got != &tr.hooks {
		t.Fatalf("ContextClientTrace = %p; want the attempt's hooks %p", got, &tr.hooks)
	}
	if ctx.Value(key{}) != "v" {
		t.Fatal("the parent's value is lost")
	}
	if dl, ok := ctx.Deadline(); !ok || !dl.Equal(mustDeadline(t, parent)) {
		t.Fatal("the parent's deadline is lost")
	}
	// A context derived from it is cancelled with the parent, as net/http
	// derives one per request.
	child, stop := context.WithCancel(ctx)
	defer stop()
	cancel()
	<-child.Done()
	if ctx.Err() != context.Canceled {
		t.Fatalf("Err = %v; want the parent's", ctx.Err())
	}
}

func mustDeadline(t *testing.T, ctx context.Context) time.Time {
	t.Helper()
	dl, ok := ctx.Deadline()
	if !ok {
		t.Fatal("no deadline")
	}
	return dl
}

// factsClassifier records the trace facts of the attempts it classifies.
type factsClassifier struct {
	DefaultClassifier
	facts []AttemptResult
}

func (c *factsClassifier) Classify(a *AttemptResult) Classification {
	c.facts = append(c.facts, *a)
	return c.DefaultClassifier.Classify(a)
}

// A caller's own trace keeps seeing the events of every attempt, and the
// Transport still sees them too.
func TestCallersTraceIsComposedWithTheAttempts(t *testing.T) {
	p := newProvider(t, status(200))
	var got, wrote atomic.Int32
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GotConn:      func(httptrace.GotConnInfo) { got.Add(1) },
		WroteRequest: func(httptrace.WroteRequestInfo) { wrote.Add(1) },
	})
	cls := &factsClassifier{}
	tr, _ := newFakeTransport(Config{Classifier: cls})
	resp, err := send(ctx, t, tr, "POST", p.URL, "x")
	if err != nil {
		t.Fatal(err)
	}
	finalOutcome(t, resp)
	if got.Load() != 1 || wrote.Load() != 1 {
		t.Fatalf("caller's trace saw %d connections and %d writes; want 1 and 1", got.Load(), wrote.Load())
	}
	if len(cls.facts) != 1 || !cls.facts[0].Traced || !cls.facts[0].Connected || !cls.facts[0].Written {
		t.Fatalf("Transport's facts %+v; want one attempt traced, connected and written", cls.facts)
	}
}

// Without a trace of the caller's, the attempt's own context carries the
// Transport's trace to net/http.
func TestAttemptsAreTracedWithoutACallersTrace(t *testing.T) {
	p := newProvider(t, status(200))
	cls := &factsClassifier{}
	tr, _ := newFakeTransport(Config{Classifier: cls})
	resp, err := send(context.Background(), t, tr, "POST", p.URL, "x")
	if err != nil {
		t.Fatal(err)
	}
	finalOutcome(t, resp)
	if len(cls.facts) != 1 || !cls.facts[0].Traced || !cls.facts[0].Connected || !cls.facts[0].Written {
		t.Fatalf("Transport's facts %+v; want one attempt traced, connected and written", cls.facts)
	}
}
