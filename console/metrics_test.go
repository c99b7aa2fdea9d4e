package console

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
)

// request returns a request to host made for tenant's action.
func request(host, tenant string) *http.Request {
	r, _ := http.NewRequest("POST", "https://"+host+"/v1/messages", nil)
	if tenant == "" {
		return r
	}
	return r.WithContext(retrybudget.WithAction(context.Background(), retrybudget.Action{Tenant: tenant, Key: "k"}))
}

func arrival(o retrybudget.Observer, host, tenant string, status int) {
	o.Attempt(retrybudget.AttemptEvent{Request: request(host, tenant), Attempt: 1, StatusCode: status})
}

func TestMetricsBucketsByTheClock(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)}
	m := NewMetrics(MetricsConfig{Bucket: 10 * time.Second, Buckets: 3, Now: clock.Now})
	o := m.Observer()
	arrival(o, "api.twilio.com", "acme", 200) // span 0
	clock.Add(10 * time.Second)
	arrival(o, "api.twilio.com", "acme", 429) // span 1
	arrival(o, "api.twilio.com", "acme", 200)
	clock.Add(10 * time.Second)
	o.Attempt(retrybudget.AttemptEvent{Request: request("api.twilio.com", "acme"), Attempt: 2, StatusCode: 200}) // span 2: a retry, no arrival
	all := func(string) bool { return true }

	d := m.view(clock.Now(), false, all)
	if len(d) != 1 {
		t.Fatalf("%d destinations, want 1", len(d))
	}
	got := []int64{d[0].Spans[0].Arrivals, d[0].Spans[1].Arrivals, d[0].Spans[2].Arrivals}
	if fmt.Sprint(got) != "[1 2 0]" || d[0].Sum.Attempts != 4 || d[0].Sum.Status429 != 1 {
		t.Errorf("arrivals per span %v, attempts %d, 429s %d; want [1 2 0], 4, 1", got, d[0].Sum.Attempts, d[0].Sum.Status429)
	}
	// Two spans on, the first two have left the window; the ring's slot
	// of span 0, reused by span 3, starts empty.
	clock.Add(20 * time.Second)
	arrival(o, "api.twilio.com", "acme", 200) // span 4
	d = m.view(clock.Now(), false, all)
	got = []int64{d[0].Spans[0].Arrivals, d[0].Spans[1].Arrivals, d[0].Spans[2].Arrivals}
	if fmt.Sprint(got) != "[0 0 1]" || d[0].Sum.Attempts != 2 || d[0].Sum.Status429 != 0 {
		t.Errorf("after 20s: arrivals per span %v, attempts %d, 429s %d; want [0 0 1], 2 (span 2's retry and span 4's), 0", got, d[0].Sum.Attempts, d[0].Sum.Status429)
	}
	if ts := d[0].Tenants; len(ts) != 1 || ts[0].Name != "acme" || ts[0].Sum.Arrivals != 1 || ts[0].Share != 1 {
		t.Errorf("tenants %+v, want acme with 1 arrival and the whole share", ts)
	}
	// A window later, nothing is left.
	clock.Add(30 * time.Second)
	if d = m.view(clock.Now(), false, all); d[0].Sum != (counts{}) {
		t.Errorf("a window later the destination still counts %+v", d[0].Sum)
	}
}

func TestMetricsCountsEachEventKind(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)}
	m := NewMetrics(MetricsConfig{Now: clock.Now})
	o := m.Observer()
	r := request("api.twilio.com", "acme")
	o.Limited(retrybudget.LimitEvent{Request: r, Wait: 2 * time.Second})
	o.Cooldown(retrybudget.LimitEvent{Request: r, Until: clock.Now().Add(time.Minute)})
	o.GiveUp(retrybudget.GiveUpEvent{Request: r, Outcome: retrybudget.Outcome{Reason: retrybudget.ErrRateLimited}})
	o.GiveUp(retrybudget.GiveUpEvent{Request: r, Outcome: retrybudget.Outcome{Reason: retrybudget.ErrThrottled}})
	o.GiveUp(retrybudget.GiveUpEvent{Request: r, Outcome: retrybudget.Outcome{Reason: retrybudget.ErrBudgetExhausted}})
	o.GiveUp(retrybudget.GiveUpEvent{Request: r, Outcome: retrybudget.Outcome{Reason: retrybudget.ErrUncertain}})
	d := m.view(clock.Now(), false, func(string) bool { return true })[0]
	want := counts{Waits: 1, WaitTime: 2 * time.Second, Pauses: 1, Refusals: 1, Overload: 1, BudgetRefusals: 1}
	if d.Sum != want || !d.PausedUntil.Equal(clock.Now().Add(time.Minute)) {
		t.Errorf("counts %+v paused until %v; want %+v until a minute on", d.Sum, d.PausedUntil, want)
	}
}

func TestMetricsCapsDestinationsAndTenants(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)}
	m := NewMetrics(MetricsConfig{MaxDestinations: 2, MaxTenants: 2, Now: clock.Now})
	o := m.Observer()
	for _, host := range []string{"a.example", "b.example"} {
		arrival(o, host, "acme", 200)
		clock.Add(time.Second)
	}
	arrival(o, "a.example", "acme", 200) // a is now the warmer
	clock.Add(time.Second)
	arrival(o, "c.example", "acme", 200) // takes b's place, the coldest
	for _, tenant := range []string{"t1", "t2", "t3"} {
		clock.Add(time.Second)
		arrival(o, "c.example", tenant, 200)
	}
	d := m.view(clock.Now(), false, func(string) bool { return true })
	if len(d) != 2 || d[0].Name != "a.example" || d[1].Name != "c.example" {
		t.Fatalf("destinations %v, want a.example and c.example (b.example, the coldest, dropped)", names(d))
	}
	c := d[1]
	if len(c.Tenants) != 2 || c.Tenants[0].Name != "t2" || c.Tenants[1].Name != "t3" || c.Sum.Arrivals != 4 {
		t.Errorf("c.example's tenants %+v, total arrivals %d; want t2 and t3 (the newest two), 4 in the total", c.Tenants, c.Sum.Arrivals)
	}
}

func TestMetricsViewOfAScopedOperator(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)}
	m := NewMetrics(MetricsConfig{Now: clock.Now})
	o := m.Observer()
	arrival(o, "shared.example", "acme", 200)
	arrival(o, "shared.example", "globex", 429)
	arrival(o, "globex-only.example", "globex", 200)
	d := m.view(clock.Now(), true, func(t string) bool { return t == "acme" })
	if len(d) != 1 || d[0].Name != "shared.example" || len(d[0].Tenants) != 1 || d[0].Sum.Arrivals != 1 || d[0].Sum.Status429 != 0 || d[0].ShowBudget {
		t.Errorf("acme's view %+v; want shared.example only, with acme's one arrival, no 429 and no budget", d)
	}
}

func names(d []destView) []string {
	out := make([]string, len(d))
	for i, v := range d {
		out[i] = v.Name
	}
	return out
}
