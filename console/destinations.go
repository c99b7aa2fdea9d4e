package console

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"time"
)

// defaultMetricsRefresh is how often the Destinations pages reload
// themselves when Config.Refresh is zero: they are live views.
const defaultMetricsRefresh = 5 * time.Second

// chartRow is one metric of a destination: its chart and its total.
type chartRow struct {
	Name  string
	Total string
	Chart template.HTML
}

// withMetrics answers 404, saying why, when the console has no Metrics.
func (h *handler) withMetrics(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if h.cfg.Metrics == nil {
			h.message(w, r, http.StatusNotFound, "No destinations",
				"This console observes no Transport: the service that mounts it sets console.Config.Metrics and installs its Observer on the Transport (the retrybudget console command serves a store only).")
			return
		}
		next(w, r)
	}
}

// scope returns whether op sees only some tenants, and the test of which.
func (h *handler) scope(op Operator) (bool, func(string) bool) {
	return h.cfg.Tenants != nil || op.Tenants != nil, func(t string) bool { return h.visible(op, t) }
}

func (h *handler) refreshSeconds() int {
	if h.cfg.Refresh > 0 {
		return max(1, int(h.cfg.Refresh.Seconds()))
	}
	return int(defaultMetricsRefresh.Seconds())
}

func (h *handler) destinationsPage(w http.ResponseWriter, r *http.Request) {
	scoped, visible := h.scope(operatorOf(r).Operator)
	now := h.now()
	dests := h.cfg.Metrics.view(now, scoped, visible)
	type row struct {
		destView
		Link     string
		Arrivals template.HTML
		Paused   bool
	}
	rows := make([]row, len(dests))
	for i, d := range dests {
		rows[i] = row{destView: d, Link: "destination?" + url.Values{"name": {d.Name}}.Encode(),
			Arrivals: barChart("first attempts per bucket", values(d.Spans, func(c counts) float64 { return float64(c.Arrivals) })),
			Paused:   now.Before(d.PausedUntil)}
	}
	h.render(w, http.StatusOK, "destinations.html", map[string]any{
		"Base": base(r), "Refresh": h.refreshSeconds(), "Rows": rows, "Window": h.window(),
	})
}

func (h *handler) destinationPage(w http.ResponseWriter, r *http.Request) {
	scoped, visible := h.scope(operatorOf(r).Operator)
	now := h.now()
	name := r.URL.Query().Get("name")
	var d *destView
	for _, v := range h.cfg.Metrics.view(now, scoped, visible) {
		if v.Name == name {
			d = &v
			break
		}
	}
	if d == nil {
		h.message(w, r, http.StatusNotFound, "No such destination", "No traffic to this destination was seen in the window, or none of it is yours to see.")
		return
	}
	secs := h.cfg.Metrics.cfg.Bucket.Seconds()
	perSecond := func(f func(counts) int64) func(counts) float64 {
		return func(c counts) float64 { return float64(f(c)) / secs }
	}
	chart := func(name string, f func(counts) int64) chartRow {
		return chartRow{Name: name, Total: fmt.Sprint(f(d.Sum)), Chart: barChart(name, values(d.Spans, func(c counts) float64 { return float64(f(c)) }))}
	}
	charts := []chartRow{
		{Name: "arrivals per second (first attempts sent)", Total: fmt.Sprintf("%.2f/s now, %d in the window", perSecond(func(c counts) int64 { return c.Arrivals })(d.Spans[len(d.Spans)-1]), d.Sum.Arrivals),
			Chart: barChart("arrivals per second", values(d.Spans, perSecond(func(c counts) int64 { return c.Arrivals })))},
		chart("attempts (retries included)", func(c counts) int64 { return c.Attempts }),
		chart("provider 429s", func(c counts) int64 { return c.Status429 }),
		chart("provider pauses (Retry-After)", func(c counts) int64 { return c.Pauses }),
		chart("limiter waits", func(c counts) int64 { return c.Waits }),
		chart("limiter refusals (wait could not fit)", func(c counts) int64 { return c.Refusals }),
		chart("retry budget refusals", func(c counts) int64 { return c.BudgetRefusals }),
		chart("overload refusals", func(c counts) int64 { return c.Overload }),
		chart("replays (stored answers)", func(c counts) int64 { return c.Replays }),
		chart("conflicts (key reused)", func(c counts) int64 { return c.Conflicts }),
	}
	h.render(w, http.StatusOK, "destination.html", map[string]any{
		"Base": base(r), "Refresh": h.refreshSeconds(), "D": d, "Charts": charts, "Window": h.window(),
		"Paused": now.Before(d.PausedUntil), "Bucket": h.cfg.Metrics.cfg.Bucket,
	})
}

// window is the span the pages show.
func (h *handler) window() time.Duration {
	return h.cfg.Metrics.cfg.Bucket * time.Duration(h.cfg.Metrics.cfg.Buckets)
}

// values maps spans to chart values.
func values(spans []counts, f func(counts) float64) []float64 {
	out := make([]float64, len(spans))
	for i, c := range spans {
		out[i] = f(c)
	}
	return out
}
