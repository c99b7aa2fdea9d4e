package console

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/ledger"
)

// MetricsConfig configures a Metrics. The zero value is ready to use.
type MetricsConfig struct {
	// Destination names the destination an event counts against. Set it
	// to the Transport's Config.Boundary, so that each page is one
	// limiter boundary. Nil means the request's URL host, the Transport's
	// default boundary and destination.
	Destination func(*http.Request) string
	// Bucket is the span one bar of a chart covers. Zero means 10 seconds.
	Bucket time.Duration
	// Buckets is how many spans are kept: the window the pages show is
	// Bucket times Buckets. Zero means 60 (ten minutes of 10-second bars).
	Buckets int
	// MaxDestinations caps the destinations kept. A destination is often
	// a host a caller chooses (webhooks): when the cap is reached, the one
	// seen least recently is dropped to make room. Zero means 64.
	MaxDestinations int
	// MaxTenants caps the tenants kept per destination. When the cap is
	// reached, the tenant seen least recently is dropped (its events stay
	// in the destination's totals). Zero means 32.
	MaxTenants int
	// Now is the clock that places events in buckets. Nil means time.Now.
	Now func() time.Time
}

const (
	defaultBucket          = 10 * time.Second
	defaultBuckets         = 60
	defaultMaxDestinations = 64
	defaultMaxTenants      = 32
)

// Metrics is a small in-memory store of what Transports observe, per
// destination and per tenant (the Action's Tenant), in time buckets, for
// the console's Destinations pages (Config.Metrics). Install its Observer
// on each Transport whose traffic the pages should show, joined with the
// Transport's other observers (retrybudget.Observer.Join); docs/console.md
// shows a service that does. It keeps at most MaxDestinations destinations of MaxTenants tenants,
// each Buckets buckets long, whatever the traffic. Metrics is safe for
// concurrent use; the zero value is not usable: use NewMetrics.
type Metrics struct {
	mu    sync.Mutex // guards dests and every destStats in it
	cfg   MetricsConfig
	dests map[string]*destStats
}

// counts are one bucket's events.
type counts struct {
	Arrivals       int64         // first attempts sent
	Attempts       int64         // every attempt sent, retries included
	Status429      int64         // attempts the provider answered 429
	Pauses         int64         // provider answers that paused the boundary (Observer.Cooldown)
	Waits          int64         // times the limiter made an attempt wait (Observer.Limited)
	WaitTime       time.Duration // how long those waits were
	Refusals       int64         // calls ended because the limiter's wait could not fit (ErrRateLimited)
	BudgetRefusals int64         // calls ended by the retry budget (ErrBudgetExhausted)
	Overload       int64         // calls refused before sending: overload or throttle (ErrThrottled)
	Replays        int64         // actions the ledger answered with a stored answer
	Conflicts      int64         // actions whose key was reused for another request
}

func (c *counts) add(o counts) {
	c.Arrivals += o.Arrivals
	c.Attempts += o.Attempts
	c.Status429 += o.Status429
	c.Pauses += o.Pauses
	c.Waits += o.Waits
	c.WaitTime += o.WaitTime
	c.Refusals += o.Refusals
	c.BudgetRefusals += o.BudgetRefusals
	c.Overload += o.Overload
	c.Replays += o.Replays
	c.Conflicts += o.Conflicts
}

// bucket is one span of a series; n is the span's number (time / Bucket),
// so a slot of the ring left from an earlier lap is told from a current one.
type bucket struct {
	n int64
	c counts
}

// series is a ring of buckets.
type series []bucket

// at returns the counts of span n, zero when the ring holds a newer or an
// older lap in its slot.
func (s series) at(n int64) counts {
	b := s[mod(n, len(s))]
	if b.n != n {
		return counts{}
	}
	return b.c
}

// slot returns span n's counts to add to, emptying a slot of an earlier lap.
func (s series) slot(n int64) *counts {
	b := &s[mod(n, len(s))]
	if b.n != n {
		*b = bucket{n: n}
	}
	return &b.c
}

func mod(n int64, m int) int { return int(((n % int64(m)) + int64(m)) % int64(m)) }

type destStats struct {
	seen        time.Time
	total       series
	tenants     map[string]*tenantStats // at most MaxTenants entries
	budget      budgetState
	pausedUntil time.Time
}

type tenantStats struct {
	seen time.Time
	s    series
}

// budgetState is the retry budget's last decision for a destination.
type budgetState struct {
	At                time.Time
	Deposits, Retries int64
	Ratio             float64
	Allowed           bool
}

// NewMetrics returns an empty Metrics.
func NewMetrics(cfg MetricsConfig) *Metrics {
	if cfg.Destination == nil {
		cfg.Destination = func(r *http.Request) string { return r.URL.Host }
	}
	if cfg.Bucket <= 0 {
		cfg.Bucket = defaultBucket
	}
	if cfg.Buckets <= 0 {
		cfg.Buckets = defaultBuckets
	}
	if cfg.MaxDestinations <= 0 {
		cfg.MaxDestinations = defaultMaxDestinations
	}
	if cfg.MaxTenants <= 0 {
		cfg.MaxTenants = defaultMaxTenants
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Metrics{cfg: cfg, dests: make(map[string]*destStats)}
}

// Observer returns the Observer that feeds m. Join it with the
// Transport's other observers (Observer.Join).
func (m *Metrics) Observer() retrybudget.Observer {
	return retrybudget.Observer{
		Attempt: func(e retrybudget.AttemptEvent) {
			m.record(e.Request, func(c *counts) {
				c.Attempts++
				if e.Attempt == 1 && !e.Hedge {
					c.Arrivals++
				}
				if e.StatusCode == http.StatusTooManyRequests {
					c.Status429++
				}
			})
		},
		Limited: func(e retrybudget.LimitEvent) {
			m.record(e.Request, func(c *counts) { c.Waits++; c.WaitTime += e.Wait })
		},
		Cooldown: func(e retrybudget.LimitEvent) {
			m.record(e.Request, func(c *counts) { c.Pauses++ })
			m.destination(e.Request, func(d *destStats) {
				if e.Until.After(d.pausedUntil) {
					d.pausedUntil = e.Until
				}
			})
		},
		Budget: func(e retrybudget.BudgetEvent) {
			now := m.cfg.Now()
			m.destination(e.Request, func(d *destStats) {
				d.budget = budgetState{At: now, Deposits: e.Decision.Deposits, Retries: e.Decision.Retries,
					Ratio: e.Decision.Ratio(), Allowed: e.Decision.Allowed}
			})
		},
		GiveUp: func(e retrybudget.GiveUpEvent) {
			m.record(e.Request, func(c *counts) {
				switch {
				case errors.Is(e.Outcome.Reason, retrybudget.ErrRateLimited):
					c.Refusals++
				case errors.Is(e.Outcome.Reason, retrybudget.ErrBudgetExhausted):
					c.BudgetRefusals++
				case errors.Is(e.Outcome.Reason, retrybudget.ErrThrottled):
					c.Overload++
				}
			})
		},
		Ledger: func(e retrybudget.LedgerEvent) {
			if e.Op != "reserve" || e.Err != nil {
				return
			}
			m.record(e.Request, func(c *counts) {
				switch e.Verdict {
				case ledger.VerdictReplayed:
					c.Replays++
				case ledger.VerdictConflict:
					c.Conflicts++
				}
			})
		},
	}
}

// record adds an event of r's destination and tenant to the current span.
func (m *Metrics) record(r *http.Request, add func(*counts)) {
	if r == nil {
		return
	}
	tenant := ""
	if a, ok := retrybudget.ActionFrom(r.Context()); ok {
		tenant = a.Tenant
	}
	now := m.cfg.Now()
	n := m.span(now)
	m.destination(r, func(d *destStats) {
		add(d.total.slot(n))
		t := d.tenants[tenant]
		if t == nil {
			if len(d.tenants) >= m.cfg.MaxTenants {
				delete(d.tenants, coldest(d.tenants, func(t *tenantStats) time.Time { return t.seen }))
			}
			t = &tenantStats{s: make(series, m.cfg.Buckets)}
			d.tenants[tenant] = t
		}
		t.seen = now
		add(t.s.slot(n))
	})
}

// destination runs fn on r's destination's stats under m.mu, adding the
// destination (and dropping the coldest one at the cap) when new.
func (m *Metrics) destination(r *http.Request, fn func(*destStats)) {
	if r == nil {
		return
	}
	name := m.cfg.Destination(r)
	now := m.cfg.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.dests[name]
	if d == nil {
		if len(m.dests) >= m.cfg.MaxDestinations {
			delete(m.dests, coldest(m.dests, func(d *destStats) time.Time { return d.seen }))
		}
		d = &destStats{total: make(series, m.cfg.Buckets), tenants: make(map[string]*tenantStats)}
		m.dests[name] = d
	}
	d.seen = now
	fn(d)
}

// coldest returns the key of the entry seen least recently. It scans the
// map, which its cap keeps small, and only when a new entry needs room.
func coldest[V any](entries map[string]V, seen func(V) time.Time) string {
	var key string
	var oldest time.Time
	first := true
	for k, v := range entries {
		if s := seen(v); first || s.Before(oldest) {
			key, oldest, first = k, s, false
		}
	}
	return key
}

func (m *Metrics) span(t time.Time) int64 { return t.UnixNano() / int64(m.cfg.Bucket) }

// destView is one destination as the pages show it, over the window.
type destView struct {
	Name        string
	Spans       []counts // oldest first; the last is the current span
	Sum         counts
	Tenants     []tenantView // sorted by name
	Budget      budgetState
	ShowBudget  bool // the budget is the destination's, of every tenant: shown to unscoped operators only
	PausedUntil time.Time
}

type tenantView struct {
	Name  string
	Sum   counts
	Share float64 // of the shown arrivals
}

// view returns the destinations, sorted by name, as an operator sees them
// at now: with scoped, only the tenants visible reports true for, and the
// charts and totals of those tenants only; a destination none of whose
// tenants are visible is left out.
func (m *Metrics) view(now time.Time, scoped bool, visible func(tenant string) bool) []destView {
	last := m.span(now)
	first := last - int64(m.cfg.Buckets) + 1
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]destView, 0, len(m.dests))
	for name, d := range m.dests {
		v := destView{Name: name, Spans: make([]counts, m.cfg.Buckets), PausedUntil: d.pausedUntil,
			Budget: d.budget, ShowBudget: !scoped}
		for tn, t := range d.tenants {
			if !visible(tn) {
				continue
			}
			tv := tenantView{Name: tn}
			for n := first; n <= last; n++ {
				c := t.s.at(n)
				tv.Sum.add(c)
				if scoped {
					v.Spans[n-first].add(c)
				}
			}
			v.Tenants = append(v.Tenants, tv)
		}
		if scoped && len(v.Tenants) == 0 {
			continue
		}
		if !scoped {
			for n := first; n <= last; n++ {
				v.Spans[n-first] = d.total.at(n)
			}
		}
		for _, c := range v.Spans {
			v.Sum.add(c)
		}
		var arrivals int64
		for _, t := range v.Tenants {
			arrivals += t.Sum.Arrivals
		}
		for i := range v.Tenants {
			if arrivals > 0 {
				v.Tenants[i].Share = float64(v.Tenants[i].Sum.Arrivals) / float64(arrivals)
			}
		}
		slices.SortFunc(v.Tenants, func(a, b tenantView) int { return strings.Compare(a.Name, b.Name) })
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b destView) int { return strings.Compare(a.Name, b.Name) })
	return out
}
