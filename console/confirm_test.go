package console

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// TestConfirmedSettleOfASettledActionIsRefused: a confirmed "not
// applied" posted again, with the sealed key the page after settling
// carries (?k=), finds the action settled and changes nothing: 409, the
// first operator's settlement kept.
func TestConfirmedSettleOfASettledActionIsRefused(t *testing.T) {
	f := memoryFixture(t, Config{})
	k := testKey("acme", secretKey)
	holdSettling(t, f.store, k)
	f.clock.Add(90 * time.Second)
	ref := f.actionRef()
	form := f.settleForm(ref, false)
	_, page := f.do("POST", "/action/"+ref+"/settle", testToken, form)
	form.Set("confirm", confirmField.FindStringSubmatch(page)[1])
	if code, _ := f.do("POST", "/action/"+ref+"/settle", testToken, form); code != http.StatusSeeOther {
		t.Fatalf("alice: %d", code)
	}
	f.clock.Add(5 * time.Second)
	form.Set("name", "bob")
	form.Set("reason", "bob overwrote it")
	code, _ := f.do("POST", "/action/"+ref+"/settle?k="+url.QueryEscape(form.Get("k")), testToken, form)
	rec := mustGet(t, f.store, k)
	if code != http.StatusConflict || rec.Settlement.By != "alice" {
		t.Errorf("replayed confirmation of a settled action: status %d, settlement by %q; want 409 and alice's settlement kept", code, rec.Settlement.By)
	}
}

// barrierMemory holds the settle requests' finds (Sweep) once armed: the
// first until the second has found the action too, the second until the
// first has answered, so two operators confirm one action at once.
type barrierMemory struct {
	*ledger.Memory
	mu      sync.Mutex
	armed   bool
	n       int
	both    chan struct{} // closed when both finds are done
	release chan struct{} // closed when the first settle has answered
}

func (b *barrierMemory) Sweep(ctx context.Context, n int) ([]ledger.Record, error) {
	r, err := b.Memory.Sweep(ctx, n)
	b.mu.Lock()
	if !b.armed {
		b.mu.Unlock()
		return r, err
	}
	b.n++
	i := b.n
	if i == 2 {
		close(b.both)
	}
	b.mu.Unlock()
	if i == 1 {
		<-b.both
	} else {
		<-b.release
	}
	return r, err
}

// TestConcurrentConfirmedSettlesEndWithOneResolution: two operators
// confirm "not applied" for one action at once, both having found it held;
// one settles it (303), the other is refused (409).
func TestConcurrentConfirmedSettlesEndWithOneResolution(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)}
	mem := ledger.NewMemory(ledger.MemoryConfig{Now: clock.Now})
	bm := &barrierMemory{Memory: mem}
	f := newFixture(t, bm, clock, Config{})
	k := testKey("acme", secretKey)
	holdSettling(t, mem, k)
	clock.Add(90 * time.Second)
	ref := f.actionRef()
	alice := f.settleForm(ref, false)
	_, page := f.do("POST", "/action/"+ref+"/settle", testToken, alice)
	alice.Set("confirm", confirmField.FindStringSubmatch(page)[1])
	bob := url.Values{}
	for k, v := range alice {
		bob[k] = v
	}
	bob.Set("name", "bob")
	bm.mu.Lock()
	bm.armed, bm.both, bm.release = true, make(chan struct{}), make(chan struct{})
	bm.mu.Unlock()
	codes := make([]int, 2)
	var done sync.WaitGroup
	var once sync.Once
	for i, form := range []url.Values{alice, bob} {
		done.Go(func() {
			codes[i], _ = f.do("POST", "/action/"+ref+"/settle", testToken, form)
			once.Do(func() { close(bm.release) })
		})
	}
	done.Wait()
	slices.Sort(codes)
	if codes[0] != http.StatusSeeOther || codes[1] != http.StatusConflict {
		t.Errorf("statuses %v; want one 303 and one 409", codes)
	}
	if rec := mustGet(t, mem, k); rec.State != ledger.StateFailed || rec.Settlement == nil {
		t.Errorf("record %s, settlement %+v; want failed, settled once", rec.State, rec.Settlement)
	}
}
